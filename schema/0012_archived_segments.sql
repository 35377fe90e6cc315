-- Vigil catalog, migration 0012: segments kept in the archive after their local extents were
-- reclaimed, and per-camera archive policy (issue [L], docs/archive.md).
--
-- archived: retention freed the segment's extents, but it has a verified 's3' copy
-- (segment_copies): its row, GOP index and copy stay, its extents go, and readers fetch its GOPs
-- from the object by Range GETs. volume_id still names the volume it was recorded on.

ALTER TABLE segments DROP CONSTRAINT segments_state_check;
ALTER TABLE segments ADD CONSTRAINT segments_state_check
  CHECK (state IN ('open', 'closed', 'damaged', 'deleting', 'archived'));
COMMENT ON COLUMN segments.state IS
  'open: being written; closed: sealed, GOP index stored; damaged: a check found bad records (see gaps); deleting: retention is freeing its extents; archived: its extents are free, its verified archive copy (segment_copies) is read instead.';

ALTER TABLE cameras
  ADD COLUMN archive_after_s integer CHECK (archive_after_s BETWEEN 0 AND 31536000),
  ADD COLUMN archive_retention_days integer CHECK (archive_retention_days BETWEEN 1 AND 36500);
COMMENT ON COLUMN cameras.archive_after_s IS
  'Copy a closed segment to the archive once closed this long; NULL: vigild''s --archive-after.';
COMMENT ON COLUMN cameras.archive_retention_days IS
  'Delete archive copies (and archived segments) older than this; NULL: vigild''s --archive-retention (none: kept).';
