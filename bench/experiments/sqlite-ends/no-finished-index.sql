-- What messages_finished (retention's index) costs a push's end.
-- (a bound, not a design: counts or read paths are wrong without it). bench/sqlite-ends.sh measures it.
DROP INDEX messages_finished;
