// Micro-benchmark of HeraldCore rendering: validate + render one realistic
// message for one device, N iterations on one thread; then the TimeZones
// conversions (TimeZonesBench.swift; filter "TZ" runs only those) and the
// delivery-policy verdict (PolicyBench.swift; filter "policy").
//
//   herald-bench [iterations] [name filter]   (default 1,000,000, all)
//
// Prints the wall-clock rate and the rate by the thread's own CPU time
// (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other builders the
// wall clock also counts time spent waiting for a core, the CPU time does not.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldCore
import HeraldPrimitives

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 1_000_000 : 1_000_000
let filter = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : ""

let content = NotificationContent(
    title: .translations(["en": "Your order has shipped", "de": "Deine Bestellung ist unterwegs", "fr": "Votre commande est en route"]),
    subtitle: .translations(["en": "Arriving Thursday", "de": "Ankunft Donnerstag", "fr": "Arrivée jeudi"]),
    body: .translations([
        "en": "Track parcel 1Z999 and see the delivery window in the app.",
        "de": "Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.",
        "fr": "Suivez le colis 1Z999 et consultez le créneau dans l’app.",
    ]),
    defaultLocale: "en",
    sound: "chime.caf",
    badge: 3,
    userInfo: [
        "order_id": "A-10023",
        "amount": 42.5,
        "items": 3,
        "deeplink": "shop://orders/A-10023",
        "meta": ["carrier": "UPS", "express": true, "legs": [1, 2]],
    ],
    threadID: "orders",
    imageURL: "https://cdn.example.com/parcels/a10023.jpg",
    category: "ORDER_UPDATE")

func input(_ platform: Platform) -> RenderInput {
    RenderInput(
        message: MessageInput(
            bundleID: "com.example.shop", platform: platform, content: content,
            priority: .high, ttlSeconds: 3600, collapseID: "order-A-10023",
            ios: ["aps": ["alert": ["launch-image": "splash"], "interruption-level": "time-sensitive"]],
            android: ["notification": ["icon": "parcel"]],
            idempotencyKey: "order-A-10023-shipped"),
        locale: "de-CH",
        deviceToken: String(repeating: "7f", count: 32))
}

let now = Timestamp(seconds: 1_767_225_600)
let apnsID = "123e4567-e89b-12d3-a456-426614174000"

struct Result {
    var name: String
    var nanoseconds: Double
    var cpuNanoseconds: Double
    var rate: Double { 1e9 / nanoseconds }
    var cpuRate: Double { 1e9 / cpuNanoseconds }
}

/// This thread's CPU time in nanoseconds.
func threadCPUTime() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
}

@discardableResult
func measure(_ name: String, unit: String = "render", _ body: () throws -> Int) rethrows -> Result? {
    if !filter.isEmpty && !name.contains(filter) { return nil }
    var checksum = 0
    for _ in 0..<(iterations / 10) { checksum &+= try body() }  // warm up
    let clock = ContinuousClock()
    let start = clock.now
    let cpuStart = threadCPUTime()
    for _ in 0..<iterations { checksum &+= try body() }
    let cpu = threadCPUTime() - cpuStart
    let elapsed = clock.now - start
    let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    let r = Result(name: name, nanoseconds: ns / Double(iterations), cpuNanoseconds: cpu / Double(iterations))
    print("\(name): \(Int(r.rate.rounded())) \(unit)s/s, \(Int(r.nanoseconds.rounded())) ns/\(unit) wall; "
        + "\(Int(r.cpuRate.rounded())) \(unit)s/s, \(Int(r.cpuNanoseconds.rounded())) ns/\(unit) by thread CPU time (checksum \(checksum))")
    return r
}

let ios = input(.ios)
let android = input(.android)
let noKey: () -> String = { "unused" }

// Sanity: show what is being rendered once.
let sample = try APNsRenderer.render(
    Validator.validate(ios, generateIdempotencyKey: noKey), locale: ios.locale, deviceToken: ios.deviceToken, apnsID: apnsID, sendTime: now)
print("APNs payload: \(sample.payload.count) bytes, headers: \(sample.headers.count), locale: \(sample.resolvedLocale ?? "-")")
print("iterations: \(iterations)")

try measure("APNs validate+render") {
    let m = try Validator.validate(ios, generateIdempotencyKey: noKey)
    let r = try APNsRenderer.render(m, locale: ios.locale, deviceToken: ios.deviceToken, apnsID: apnsID, sendTime: now)
    return r.payload.count &+ r.headers.count
}
try measure("APNs render only") { [m = try Validator.validate(ios, generateIdempotencyKey: noKey)] in
    let r = try APNsRenderer.render(m, locale: ios.locale, deviceToken: ios.deviceToken, apnsID: apnsID, sendTime: now)
    return r.payload.count
}
try measure("FCM validate+render") {
    let m = try Validator.validate(android, generateIdempotencyKey: noKey)
    let r = try FCMRenderer.render(m, locale: android.locale, deviceToken: android.deviceToken)
    return r.body.count
}
measure("Schedule-time size check (3 locales)") { [m = try Validator.validate(ios, generateIdempotencyKey: noKey)] in
    APNsRenderer.payloadSizeViolations(m, handoffWindowEnd: nil).count &+ 1
}
try benchTimeZones()
try benchPolicy()
