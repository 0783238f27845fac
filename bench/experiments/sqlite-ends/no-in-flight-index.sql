-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What messages_in_flight (the start-up's release of claims) costs a push.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP INDEX messages_in_flight;
