-- Vigil catalog, migration 0013: the catalog refuses a stale epoch's rows, and planned drains
-- (docs/nodes.md, "Fencing in the catalog" and "Drain").
--
-- streams.owner_epoch: the camera's ownership epoch the stream was opened under (NULL: the camera
-- had no owner then, e.g. pushed by `vigil record`: never fenced). A segment row of a stream whose
-- epoch is neither the camera's owner_epoch nor its handover_epoch comes from a node that lost the
-- camera: the trigger below refuses it (SQLSTATE VF001). Writers that keep acknowledged footage
-- findable (pending rows, volume recovery) write such a row marked instead: segments.fenced_epoch
-- is the stale epoch, and the stream ends as 'fenced'.
--
-- nodes.state: 'active', 'draining' (its cameras move to other nodes make-before-break; it claims
-- nothing) or 'drained' (it owns no camera and claims nothing until undrained).
-- cameras.handover_node / handover_epoch: during a drain, the node that records the camera beside
-- its owner, under the epoch that becomes the camera's owner_epoch once that node's first frames
-- are in the catalog (one transaction moves owner and epoch).

ALTER TABLE streams ADD COLUMN owner_epoch bigint;
COMMENT ON COLUMN streams.owner_epoch IS
  'The camera''s ownership epoch this stream was opened under (NULL: the camera had no owner); a segment row under another epoch is refused (fenced).';
ALTER TABLE streams DROP CONSTRAINT streams_state_check;
ALTER TABLE streams ADD CONSTRAINT streams_state_check
  CHECK (state IN ('pending', 'recording', 'stopped', 'interrupted', 'refused', 'stalled', 'failed_over', 'fenced'));

ALTER TABLE segments ADD COLUMN fenced_epoch bigint;
COMMENT ON COLUMN segments.fenced_epoch IS
  'Set: written by a node after the camera had moved on (its stream''s stale epoch). Acknowledged footage, kept findable; usually a duplicate of the new owner''s.';

ALTER TABLE nodes ADD COLUMN state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining', 'drained'));
COMMENT ON COLUMN nodes.state IS
  'active; draining: its cameras are moving to other nodes (vigil node drain), it claims none; drained: it owns none and claims none until undrained.';

ALTER TABLE cameras ADD COLUMN handover_node text;
ALTER TABLE cameras ADD COLUMN handover_epoch bigint;
COMMENT ON COLUMN cameras.handover_node IS
  'During a drain: the node recording the camera beside its owner; it becomes the owner once its first frames are in the catalog.';

-- The stale epoch of stream STREAM (NULL: not stale). Holds the camera row (FOR SHARE) to the end
-- of the transaction, so no claim, sweep or handover changes the epoch before the write commits.
CREATE FUNCTION vigil_stale_epoch(stream bigint) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT s.owner_epoch FROM streams s JOIN cameras c ON c.id = s.camera_id
  WHERE s.id = stream AND s.owner_epoch IS NOT NULL
    AND s.owner_epoch <> c.owner_epoch AND s.owner_epoch IS DISTINCT FROM c.handover_epoch
  FOR SHARE OF c
$$;

-- A segment row that adds footage (a new row, or an end moved later) under a stale epoch is
-- refused unless its writer marked it (fenced_epoch set).
CREATE FUNCTION vigil_refuse_stale_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  stale bigint;
BEGIN
  IF NEW.fenced_epoch IS NOT NULL THEN RETURN NEW; END IF;
  IF TG_OP = 'UPDATE' AND NEW.end_us <= OLD.end_us THEN RETURN NEW; END IF;
  stale := vigil_stale_epoch(NEW.stream_id);
  IF stale IS NOT NULL THEN
    RAISE EXCEPTION 'stale owner epoch: stream % was opened under epoch %, and its camera has moved on', NEW.stream_id, stale
      USING ERRCODE = 'VF001', HINT = 'the node must stop recording this camera (docs/nodes.md)';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER segments_owner_epoch BEFORE INSERT OR UPDATE OF end_us ON segments
  FOR EACH ROW EXECUTE FUNCTION vigil_refuse_stale_epoch();
