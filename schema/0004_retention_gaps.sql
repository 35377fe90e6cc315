-- Vigil catalog, migration 0004: holes that retention leaves are gaps with a reason.
--
-- Retention reclaims the oldest unlocked segments first, so it normally only moves a camera's
-- first recorded moment forward. When an evidence lock keeps an older range, reclaiming what
-- lies after it leaves a hole between recordings: that hole is recorded, never silent.

ALTER TABLE gaps DROP CONSTRAINT gaps_reason_check;
ALTER TABLE gaps ADD CONSTRAINT gaps_reason_check
  CHECK (reason IN ('source_lost', 'deadline_missed', 'rate_exceeded', 'crash_recovery', 'io_error', 'corruption',
                    'retention'));
COMMENT ON COLUMN gaps.reason IS
  'source_lost: camera/client gone; deadline_missed: a cycle missed its deadline; rate_exceeded: frames above the admitted rate were dropped; crash_recovery: truncated after an unclean stop; io_error; corruption: records failed their CRC; retention: reclaimed for space or age while older recording was kept (an evidence lock).';
