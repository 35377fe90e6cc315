-- Vigil catalog, migration 0005: a recording whose source stops sending ends as 'stalled'.
--
-- A recorder that stops sending without closing its connection (a hung process, a camera that
-- froze, a network that drops packets silently) used to keep its admitted disk share, with the
-- camera shown as recording and no gap. vigild now ends such a recording after a few seconds
-- without a frame: the stream's state says 'stalled', and the hole from its last frame until the
-- camera records again is a 'source_stalled' gap.

ALTER TABLE streams DROP CONSTRAINT streams_state_check;
ALTER TABLE streams ADD CONSTRAINT streams_state_check
  CHECK (state IN ('pending', 'recording', 'stopped', 'interrupted', 'refused', 'stalled'));

ALTER TABLE gaps DROP CONSTRAINT gaps_reason_check;
ALTER TABLE gaps ADD CONSTRAINT gaps_reason_check
  CHECK (reason IN ('source_lost', 'deadline_missed', 'rate_exceeded', 'crash_recovery', 'io_error', 'corruption',
                    'retention', 'source_stalled'));
COMMENT ON COLUMN gaps.reason IS
  'source_lost: camera/client gone; source_stalled: the recorder stopped sending without closing its connection (the recording was ended and its disk share released); deadline_missed: a cycle missed its deadline; rate_exceeded: frames above the admitted rate were dropped; crash_recovery: truncated after an unclean stop; io_error; corruption: records failed their CRC; retention: reclaimed for space or age while older recording was kept (an evidence lock).';
