-- Written for schema v15 (bench/RESULTS.md, Session 44); v16 dropped events_outcome.
-- What the message-state event costs.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP TRIGGER events_message_state;
