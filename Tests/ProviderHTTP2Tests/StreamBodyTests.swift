import HeraldPrimitives
import NIOEmbedded
@testable import ProviderHTTP2
import Testing

/// A hostile peer's answer body is kept up to 64 KiB, and a longer one is
/// cut there and marked, whatever the chunking.
@Suite struct StreamBodyTests {
    private func stream() -> HTTP2StreamState {
        let loop = EmbeddedEventLoop()
        let request = HTTP2ClientRequest(path: "/", headers: [], body: [])
        let pending = HTTP2PendingRequest(request: request, eventLoop: loop) { _ in false }
        return HTTP2StreamState(pending: pending, credential: nil)
    }

    private func feed(_ stream: HTTP2StreamState, chunks: [Int]) {
        for size in chunks {
            [UInt8](repeating: 0x61, count: size).withUnsafeBytes { stream.append($0) }
        }
    }

    @Test(arguments: [
        ([HTTP2ClientAnswer.maximumBody], HTTP2ClientAnswer.maximumBody, false),
        ([HTTP2ClientAnswer.maximumBody + 1], HTTP2ClientAnswer.maximumBody, true),
        ([16_384, 16_384, 16_384, 16_384, 1], HTTP2ClientAnswer.maximumBody, true),
        ([60_000, 10_000, 10_000], HTTP2ClientAnswer.maximumBody, true),
        ([1_000_000], HTTP2ClientAnswer.maximumBody, true),
        ([10, 20], 30, false),
    ])
    func bodyIsCappedAndMarked(chunks: [Int], kept: Int, truncated: Bool) {
        let state = stream()
        feed(state, chunks: chunks)
        #expect(state.answer.body.count == kept)
        #expect(state.answer.bodyTruncated == truncated)
    }
}
