import Testing

@testable import GRPCEngine

/// How many CPUs the process may use (issue 30): cgroup files read hostile
/// first (garbage, "max", zero, negative, no unified line), the tightest
/// quota on the path wins, and the count is the fewest of online, affinity
/// and the quota rounded up, never below one.
@Suite("CPUBudget")
struct CPUBudgetTests {
    @Test(arguments: ["", "max", "max 100000", "0 100000", "-1 100000", "100000 0", "100000", "a b", "1e400 100000",
                      "100000 100000 100000", "nan 100000"])
    func cpuMaxWithoutAUsableQuotaIsNone(_ text: String) {
        #expect(CPUBudget.quota(cpuMax: text) == nil)
    }

    @Test func cpuMaxQuotasAreCPUs() {
        #expect(CPUBudget.quota(cpuMax: "150000 100000\n") == 1.5)
        #expect(CPUBudget.quota(cpuMax: "50000 100000") == 0.5)
        #expect(CPUBudget.quota(cfsQuota: "-1\n", period: "100000\n") == nil)
        #expect(CPUBudget.quota(cfsQuota: "200000\n", period: "100000\n") == 2)
        #expect(CPUBudget.quota(cfsQuota: "garbage", period: "100000") == nil)
    }

    @Test func cgroupPathsAreFoundOrRefused() {
        #expect(CPUBudget.v2Path(procSelfCgroup: "0::/system.slice/herald.service\n") == "/system.slice/herald.service")
        #expect(CPUBudget.v2Path(procSelfCgroup: "4:memory:/x\n3:cpu,cpuacct:/y\n") == nil)
        #expect(CPUBudget.v2Path(procSelfCgroup: "0::relative\n") == nil)
        #expect(CPUBudget.v1CPUPath(procSelfCgroup: "4:memory:/x\n3:cpu,cpuacct:/y\n0::/\n") == "/y")
        #expect(CPUBudget.v1CPUPath(procSelfCgroup: "3:cpuacct:/y\n") == nil)
        #expect(CPUBudget.v1CPUPath(procSelfCgroup: String(repeating: ":", count: 5000)) == nil)
        #expect(CPUBudget.ancestors(of: "/a/b") == ["/a/b", "/a", ""])
        #expect(CPUBudget.ancestors(of: "/") == [""])
    }

    @Test func theTightestQuotaOnThePathWins() {
        let files = [
            "/proc/self/cgroup": "0::/kube/pod/c\n",
            "/sys/fs/cgroup/kube/pod/c/cpu.max": "max 100000\n",
            "/sys/fs/cgroup/kube/pod/cpu.max": "250000 100000\n",
            "/sys/fs/cgroup/kube/cpu.max": "800000 100000\n",
            "/sys/fs/cgroup/cpu.max": "garbage",
        ]
        #expect(CPUBudget.cgroupQuota(readFile: { files[$0] }) == 2.5)
        let v1 = [
            "/proc/self/cgroup": "3:cpu,cpuacct:/docker/abc\n0::/\n",
            "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "150000\n",
            "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        ]
        #expect(CPUBudget.cgroupQuota(readFile: { v1[$0] }) == 1.5)
        #expect(CPUBudget.cgroupQuota(readFile: { _ in nil }) == nil)
        #expect(CPUBudget.cgroupQuota(readFile: { $0 == "/proc/self/cgroup" ? "0::/\n" : nil }) == nil)
    }

    @Test func usableIsTheFewestOfOnlineAffinityAndQuota() {
        #expect(CPUBudget(online: 16, affinity: 8, quota: nil).usable == 8)
        #expect(CPUBudget(online: 16, affinity: 8, quota: 2.5).usable == 3)
        #expect(CPUBudget(online: 16, affinity: nil, quota: 0.2).usable == 1)
        #expect(CPUBudget(online: 4, affinity: 64, quota: 100).usable == 4)
        #expect(CPUBudget(online: 0, affinity: 0, quota: 0).usable == 1)
        #expect(CPUBudget(online: 16, affinity: 8, quota: 2.5).summary
            == "3 CPUs usable (16 online, affinity 8, cgroup CPU quota 2.50)")
        #expect(CPUBudget(online: 1, affinity: nil, quota: nil).summary
            == "1 CPU usable (1 online, affinity unknown, no cgroup CPU quota)")
    }

    @Test func thisProcessHasABudget() {
        let budget = CPUBudget.current()
        #expect(budget.online >= 1)
        #expect(budget.affinity != nil)
        #expect((1...budget.online).contains(budget.usable))
        #expect(GRPCServerConfiguration().eventLoopThreads == CPUBudget.atStart.usable)
    }
}
