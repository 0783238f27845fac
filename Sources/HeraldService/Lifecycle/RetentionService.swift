import HeraldStorage
import Logging
import ServiceLifecycle

/// How long finished messages are kept, and how gently they are deleted.
public struct RetentionPolicy: Sendable {
    /// A finished message is deleted this long after its last state change
    /// (milliseconds; `--retention-days`, default 30 days). Its idempotency
    /// key is remembered until then.
    public var periodMilliseconds: Int64 = 30 * 86_400_000
    /// Most messages deleted in one write (one group commit). 100, not 500:
    /// a batch of 500 dirtied enough pages to push Schedule p99 in the same
    /// commits to 0.2-0.5 s (bench/RESULTS.md, "Retention").
    public var batchSize = 100
    /// Pause between the batches of one pass: writes queued meanwhile get
    /// the writer first, so a backlog of old rows never delays a Schedule by
    /// more than one small batch.
    public var pauseBetweenBatches: Duration = .milliseconds(20)
    /// How long counted sends (the caps' ledger, `PolicyLedger`) are kept:
    /// the longest cap period configured, in milliseconds, read at each pass
    /// (a reload applies at the next one). Older ones are pruned after the
    /// messages, in batches of `batchSize`; nil (no caps) prunes none.
    public var countedSendsHorizon: @Sendable () -> Int64? = { nil }

    public init() {}

    /// Time between passes: a tenth of the period, between 1 s and 60 s (a
    /// message is deleted at most this late; never early).
    public var passIntervalMilliseconds: Int64 { min(60_000, max(1_000, periodMilliseconds / 10)) }
}

/// What one retention pass deleted (logged; tests await it).
public struct RetentionPass: Sendable, Hashable {
    /// Messages whose last change is before this (milliseconds) were due.
    public var cutoff: Int64
    public var messages = 0
    public var outcomes = 0
    /// Writes used (the last one found fewer than a batch).
    public var batches = 0
    /// Counted sends deleted (`RetentionPolicy.countedSendsHorizon`).
    public var countedSends = 0
    /// The error that ended the pass early, if any (retried next pass).
    public var error: String?
}

/// Deletes finished messages past the retention period, in the background:
/// a pass every `passIntervalMilliseconds` on the injected clock, each pass
/// small batches through the store's group-commit writer until one comes
/// back short. Stopped at its turn in a graceful shutdown (before the store
/// closes); a batch in its write completes, the pass stops after it.
struct RetentionService: Service {
    let store: any FinishedMessagePruning
    let policy: RetentionPolicy
    let clock: any HeraldClock
    let logger: Logger
    /// Told each pass's result (tests).
    var observer: (@Sendable (RetentionPass) -> Void)?

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let now = clock.now()
                let result = await pass(now: now)
                observer?(result)
                if let error = result.error {
                    logger.warning("retention pass failed; retried at the next pass", metadata: ["error": "\(error)"])
                } else if result.messages > 0 || result.countedSends > 0 {
                    logger.info("retention: deleted finished messages", metadata: [
                        "messages": "\(result.messages)", "outcomes": "\(result.outcomes)", "batches": "\(result.batches)",
                        "counted_sends": "\(result.countedSends)",
                    ])
                }
                do {
                    try await clock.sleep(until: now + policy.passIntervalMilliseconds)
                } catch {
                    return
                }
            }
        }
    }

    /// One pass at `now`: batches until one is short, the task is cancelled
    /// or a write fails; then the same for counted sends.
    func pass(now: Int64) async -> RetentionPass {
        var result = RetentionPass(cutoff: now - policy.periodMilliseconds)
        while !Task.isCancelled {
            let batch: PruneBatch
            do {
                batch = try await store.pruneFinished(before: result.cutoff, limit: policy.batchSize)
            } catch {
                result.error = String(describing: error)
                return result
            }
            result.batches += 1
            result.messages += batch.messages
            result.outcomes += batch.outcomes
            if batch.messages < policy.batchSize { break }
            guard await pause() else { break }
        }
        if let log = store as? any EventLogPruning {
            // The delivery event log (issue 27), by the same cutoff and batches.
            var events = 0
            while !Task.isCancelled {
                let deleted: Int
                do {
                    deleted = try await log.pruneEvents(before: result.cutoff, limit: policy.batchSize)
                } catch {
                    result.error = String(describing: error)
                    return result
                }
                events += deleted
                if deleted < policy.batchSize { break }
                guard await pause() else { break }
            }
            if events > 0 { logger.info("retention: deleted delivery events", metadata: ["events": "\(events)"]) }
        }
        if let horizon = policy.countedSendsHorizon(), let ledger = store as? any PolicyLedger {
            while !Task.isCancelled {
                let deleted: Int
                do {
                    deleted = try await ledger.pruneCountedSends(before: now - max(0, horizon), limit: policy.batchSize)
                } catch {
                    result.error = String(describing: error)
                    return result
                }
                result.countedSends += deleted
                if deleted < policy.batchSize { break }
                guard await pause() else { break }
            }
        }
        return result
    }

    /// Between two batches: false when the task was cancelled meanwhile.
    private func pause() async -> Bool {
        if policy.pauseBetweenBatches > .zero {
            do { try await Task.sleep(for: policy.pauseBetweenBatches) } catch { return false }
        } else {
            await Task.yield()
        }
        return true
    }
}
