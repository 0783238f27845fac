-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What messages_finished (retention's index) costs a push's end.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP INDEX messages_finished;
