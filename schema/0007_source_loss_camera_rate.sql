-- Vigil catalog, migration 0007: media a camera never delivered is a gap; a camera's declared rate.
--
-- A recorder that sees a hole in its source's timestamps (packets the camera or the network
-- never delivered) reports it, and vigild records a 'source_loss' gap over it; before, such a
-- hole was a silent jump in the recording. ('source_lost' stays what it was: the camera or its
-- recorder went away between two streams.)
--
-- cameras.declared_rate_bps: the operator's rate for a pulled camera (`vigil camera add --rate`),
-- declared to admission instead of the camera's advertised or measured rate. NULL: not given.

ALTER TABLE gaps DROP CONSTRAINT gaps_reason_check;
ALTER TABLE gaps ADD CONSTRAINT gaps_reason_check
  CHECK (reason IN ('source_lost', 'deadline_missed', 'rate_exceeded', 'crash_recovery', 'io_error', 'corruption',
                    'retention', 'source_stalled', 'source_loss'));
COMMENT ON COLUMN gaps.reason IS
  'source_lost: camera/client gone; source_stalled: the recorder stopped sending without closing its connection (the recording was ended and its disk share released); source_loss: the source never delivered this media (a hole in its timestamps, reported by the recorder); deadline_missed: a cycle missed its deadline; rate_exceeded: frames above the admitted rate were dropped (refused and given up, or dropped by the recorder); crash_recovery: truncated after an unclean stop; io_error; corruption: records failed their CRC; retention: reclaimed for space or age while older recording was kept (an evidence lock).';

ALTER TABLE cameras ADD COLUMN declared_rate_bps bigint CHECK (declared_rate_bps IS NULL OR declared_rate_bps > 0);
COMMENT ON COLUMN cameras.declared_rate_bps IS
  'The operator''s rate for this pulled camera, bits per second, declared to admission with a margin; NULL: the camera''s advertised bitrate or a measured GOP.';
