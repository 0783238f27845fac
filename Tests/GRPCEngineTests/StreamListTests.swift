import Testing

@testable import GRPCEngine

/// The connection's list of open streams: hostile sequences (removing twice,
/// removing what was never listed, inserting twice) leave it consistent.
@Suite("Stream list")
struct StreamListTests {
    func stream(_ id: Int32) -> GRPCStream {
        GRPCStream(id: id, maxMessageBytes: 1024, receiveStartedAt: .now())
    }

    @Test func repeatedAndForeignRemovalsChangeNothing() {
        var list = GRPCStreamList()
        let (a, b, c) = (stream(1), stream(3), stream(5))
        list.insert(a)
        list.insert(b)
        list.insert(b)
        list.insert(c)
        #expect(list.count == 3)
        list.remove(b)
        list.remove(b)
        list.remove(stream(7))
        #expect(list.all.map(\.id) == [5, 1])
        list.remove(c)
        #expect(list.all.map(\.id) == [1])
        list.insert(b)
        #expect(list.all.map(\.id) == [3, 1])
        list.remove(a)
        list.remove(b)
        #expect(list.isEmpty && list.count == 0 && list.all.isEmpty)
        #expect(a.next == nil && a.previous == nil && b.next == nil)
    }

    @Test func removeAllUnlinksALongListWithoutRecursion() {
        var list = GRPCStreamList()
        let streams = (0..<100_000).map { stream(Int32($0) * 2 + 1) }
        for each in streams { list.insert(each) }
        #expect(list.count == streams.count)
        list.removeAll()
        #expect(list.isEmpty && list.count == 0)
        #expect(streams.allSatisfy { !$0.isListed && $0.next == nil && $0.previous == nil })
    }
}
