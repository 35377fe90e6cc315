-- Vigil catalog, migration 0010: several vigild nodes on one catalog (docs/nodes.md).
--
-- nodes: one row per vigild node, written only by that node: its lease, renewed every second on
-- PostgreSQL's clock (clock_timestamp(), not now(): a transaction's start would age the lease),
-- the incarnation that holds it (a new one at every start) and its admission headroom.
--
-- cameras.owner_node / owner_epoch: the node that pulls the camera (NULL: nobody yet) and the
-- fencing token of that ownership, drawn from camera_owner_epoch at every change of owner, so a
-- node that lost a camera sees at once that the epoch it holds is not the camera's any more.
--
-- A dead node's cameras are released by a sweeper on another node, which ends the dead node's
-- unfinished streams of those cameras as 'failed_over'; the camera's next stream (on whichever
-- node claims it) records the hole since the last frame as a gap with reason 'failover'.

CREATE TABLE nodes (
  node            text PRIMARY KEY CHECK (node <> '' AND octet_length(node) <= 64 AND node !~ '[\x01-\x20\x7f]'),
  incarnation     uuid NOT NULL,
  lease_until     timestamptz NOT NULL,
  heartbeat_at    timestamptz NOT NULL,
  joined_at       timestamptz NOT NULL,
  headroom_bps    bigint NOT NULL DEFAULT 0 CHECK (headroom_bps >= 0)
);
COMMENT ON TABLE nodes IS 'vigild nodes sharing this catalog; each row is written only by its node (heartbeat every second).';
COMMENT ON COLUMN nodes.lease_until IS 'On PostgreSQL''s clock: past it, the node is dead to the others and its cameras may be released.';
COMMENT ON COLUMN nodes.incarnation IS 'A new id at every start of the node: a restarted node never mistakes an earlier run''s lease for its own.';
COMMENT ON COLUMN nodes.joined_at IS 'When this incarnation''s current unbroken run of heartbeats began (a sweeper waits two leases after it).';
COMMENT ON COLUMN nodes.headroom_bps IS 'Admission headroom: what the node could still admit, bits per second; placement favours the most.';

CREATE SEQUENCE camera_owner_epoch;

ALTER TABLE cameras ADD COLUMN owner_node text;
ALTER TABLE cameras ADD COLUMN owner_epoch bigint NOT NULL DEFAULT 0;
CREATE INDEX cameras_owner_node ON cameras (owner_node);
COMMENT ON COLUMN cameras.owner_node IS 'The node that pulls this camera; NULL: unowned (a live node claims it).';
COMMENT ON COLUMN cameras.owner_epoch IS 'Fencing token: a new value of camera_owner_epoch at every change of owner.';

ALTER TABLE streams DROP CONSTRAINT streams_state_check;
ALTER TABLE streams ADD CONSTRAINT streams_state_check
  CHECK (state IN ('pending', 'recording', 'stopped', 'interrupted', 'refused', 'stalled', 'failed_over'));

ALTER TABLE gaps DROP CONSTRAINT gaps_reason_check;
ALTER TABLE gaps ADD CONSTRAINT gaps_reason_check
  CHECK (reason IN ('source_lost', 'deadline_missed', 'rate_exceeded', 'crash_recovery', 'io_error', 'corruption',
                    'retention', 'source_stalled', 'source_loss', 'failover'));
COMMENT ON COLUMN gaps.reason IS
  'source_lost: camera/client gone; source_stalled: the recorder stopped sending without closing its connection (the recording was ended and its disk share released); source_loss: the source never delivered this media (a hole in its timestamps, reported by the recorder); failover: the camera''s node died and another node took the camera over (from the dead node''s last recorded instant to the new node''s first frame); deadline_missed: a cycle missed its deadline; rate_exceeded: frames above the admitted rate were dropped (refused and given up, or dropped by the recorder); crash_recovery: truncated after an unclean stop; io_error; corruption: records failed their CRC; retention: reclaimed for space or age while older recording was kept (an evidence lock).';
