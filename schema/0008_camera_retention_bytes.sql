-- Vigil catalog, migration 0008: retention by size too.
--
-- cameras.retention_bytes: the most recorded data a camera may keep, over all its streams and
-- volumes (segments.data_bytes: the records written, framing included; the space held is that
-- rounded up to extents). Past it, retention reclaims the camera's oldest closed segments, as it
-- does those older than retention_days; segments under an active evidence lock are never
-- reclaimed and do not count against it. NULL: no quota (the volume's free-space reserve and
-- retention_days still apply).

ALTER TABLE cameras ADD COLUMN retention_bytes bigint
  CHECK (retention_bytes IS NULL OR retention_bytes >= 1048576);
COMMENT ON COLUMN cameras.retention_bytes IS
  'The most recorded bytes (segments.data_bytes, every stream and volume, evidence under an active lock not counted) this camera keeps; its oldest closed segments past it are reclaimed. NULL: no quota.';
