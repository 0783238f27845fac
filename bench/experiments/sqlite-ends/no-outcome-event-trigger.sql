-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What the device-outcome event costs (its trigger looks the message up by id).
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER events_outcome;
