public import ProviderHTTP2

/// Time for the APNs client: JWT `iat`, token age, backoff waits, and every
/// timer the pool arms. The one provider clock (``ProviderClock``), under
/// the name APNs callers know.
public typealias APNsClock = ProviderClock

/// A pending ``ProviderClock/scheduleTimer(after:on:_:)``.
public typealias APNsTimer = ProviderTimer

/// The real clock (``SystemProviderClock``).
public typealias SystemAPNsClock = SystemProviderClock
