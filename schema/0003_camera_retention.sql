-- Vigil catalog, migration 0003: per-camera retention. See docs/catalog.md.
--
-- retention_days bounds how long a camera's closed segments are kept (retention's
-- StreamRetention.max_age_us for every stream of the camera); NULL keeps them until the
-- space reserve needs them back. Evidence locks still win: a locked range is never reclaimed.

ALTER TABLE cameras ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 36500);
COMMENT ON COLUMN cameras.retention_days IS
  'Keep closed segments at most this many days (NULL: until space is needed). Set with PATCH /api/v1/cameras/{name}.';
