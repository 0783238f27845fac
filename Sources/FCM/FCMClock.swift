public import ProviderHTTP2

/// Time for the FCM client: JWT `iat`/`exp`, access-token expiry and
/// refresh, backoff waits, the rate bucket, and every timer the pool arms.
/// The one provider clock (``ProviderClock``), under the name FCM callers know.
public typealias FCMClock = ProviderClock

/// A pending ``ProviderClock/scheduleTimer(after:on:_:)``.
public typealias FCMTimer = ProviderTimer

/// The real clock (``SystemProviderClock``).
public typealias SystemFCMClock = SystemProviderClock
