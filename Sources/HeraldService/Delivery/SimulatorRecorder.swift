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
            var headers: JSONObject = [:]
            for header in delivery.headers where header.name != "authorization" {
                headers[header.name] = .string(header.value)
            }
            let payload = (try? JSONParser.parse(delivery.payload)) ?? .string(String(decoding: delivery.payload, as: UTF8.self))
            let line: JSONValue = .object([
                "service": .string("apns"),
                "apns_id": .string(delivery.apnsID),
                "device_token": .string(delivery.deviceToken),
                "headers": .object(headers),
                "payload": payload,
            ])
            var writer = JSONWriter()
            try? writer.write(line)
            writer.bytes.append(UInt8(ascii: "\n"))
            POSIXFile.writeAll(fd, writer.bytes)  // a failed record line is dropped, not fatal
        }
    }
}
