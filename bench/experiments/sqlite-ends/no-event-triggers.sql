-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What the two events a push appends cost (outcome and state), triggers and rows.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER events_message_state; DROP TRIGGER events_outcome;
