public import APNsSimulation
import HeraldCore
import HeraldPrimitives
import HeraldStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Logging

/// Appends every delivery the bundled APNs simulator accepts to a file, one
/// JSON object per line (`"service": "apns"`): what a developer watches
/// (`tail -f`) and what the end-to-end tests read. The bundled FCM
/// simulator appends its own lines (`"service": "fcm"`) to the same file.
public enum SimulatorRecorder {
    public static func record(_ simulator: APNsSimulator, to path: String, logger: Logger) async {
        await record(simulator.deliveryStream(), to: path, logger: logger)
    }

    /// The same for a delivery stream subscribed by the caller (so nothing
    /// accepted after the subscription is missed).
    public static func record(_ deliveries: AsyncStream<APNsDelivery>, to path: String, logger: Logger) async {
        // Appends: a restart on the same file keeps one record of everything.
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o666)
        guard fd >= 0 else {
            logger.error("cannot write the simulator record", metadata: ["path": "\(path)"])
            return
        }
        defer { close(fd) }
        for await delivery in deliveries {
            POSIXFile.writeAll(fd, line(for: delivery))  // a failed record line is dropped, not fatal
        }
    }

    /// One record line: `apns_id`, `device_token`, `headers` (without
    /// `authorization`), `payload`, `service`, and a newline.
    ///
    /// The payload goes in verbatim: the simulator accepts only a JSON object
    /// (`RequestValidator`), so parsing and writing it again (a third of the
    /// recorder's time, which the benchmarks' replicas pay beside their
    /// pushes) would only copy it. A payload that is not `{…}` on one line
    /// (JSON may hold raw line breaks as white space; a record line may not)
    /// is parsed and written compactly, or recorded as a string.
    static func line(for delivery: APNsDelivery) -> [UInt8] {
        var headers: JSONObject = [:]
        for header in delivery.headers where header.name != "authorization" {
            headers[header.name] = .string(header.value)
        }
        var writer = JSONWriter(capacity: 256 + delivery.payload.count)
        writer.writeRaw("{")
        writer.writeKey("apns_id", first: true)
        writer.writeString(delivery.apnsID)
        writer.writeKey("device_token", first: false)
        writer.writeString(delivery.deviceToken)
        writer.writeKey("headers", first: false)
        try? writer.writeObject(headers)
        writer.writeKey("payload", first: false)
        let payload = delivery.payload
        if payload.first == UInt8(ascii: "{"), payload.last == UInt8(ascii: "}"),
           !payload.contains(where: { $0 == 10 || $0 == 13 }) {
            var line = writer.finish()
            line.append(contentsOf: payload)
            line.append(contentsOf: #","service":"apns"}"#.utf8)
            line.append(UInt8(ascii: "\n"))
            return line
        }
        try? writer.write((try? JSONParser.parse(payload)) ?? .string(String(decoding: payload, as: UTF8.self)))
        writer.writeRaw(#","service":"apns"}"#)
        writer.writeByte(UInt8(ascii: "\n"))
        return writer.finish()
    }
}
