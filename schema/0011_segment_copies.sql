-- Vigil catalog, migration 0011: archive copies of segments (issue [L], docs/archive.md).
--
-- segment_copies: where a copy of a closed segment lives besides its volume. A copy is the
-- segment's logical bytes [0, data_bytes) — its extents in order, exactly as on the volume — so a
-- GOP index offset is an offset into the object, and a Range GET reads one GOP. A row is written
-- only after the upload was verified: every part's CRC32C checked by the store on receipt, the
-- bytes read from the volume verified against the segment's record CRCs and checksum before they
-- were sent, and the stored object's size checked afterwards.

CREATE TABLE segment_copies (
  segment_id      bigint NOT NULL REFERENCES segments ON DELETE CASCADE,
  tier            text NOT NULL CHECK (tier IN ('s3')),
  bucket          text NOT NULL CHECK (bucket <> ''),
  object_key      text NOT NULL CHECK (object_key <> ''),
  bytes           bigint NOT NULL CHECK (bytes >= 0),
  etag            text NOT NULL,
  copied_at_us    bigint NOT NULL DEFAULT vigil_now_us(),
  legal_hold      boolean NOT NULL DEFAULT false,
  PRIMARY KEY (segment_id, tier)
);
COMMENT ON TABLE segment_copies IS
  'Verified copies of closed segments outside their volume (the archive tier): the segment''s logical bytes, one object each.';
COMMENT ON COLUMN segment_copies.bytes IS 'Object size: the segment''s data_bytes, so GOP index offsets are object offsets.';
COMMENT ON COLUMN segment_copies.legal_hold IS
  'Whether the object is under S3 legal hold: set while an active evidence lock overlaps the segment, lifted after.';
