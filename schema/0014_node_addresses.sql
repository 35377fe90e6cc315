-- Vigil catalog, migration 0012: where each node serves (docs/nodes.md, "One front door").
--
-- nodes.http_address / wire_address: the node's HTTP API and wire protocol addresses as the
-- other nodes and the playback proxy reach it (vigild --advertise), written with every heartbeat.
-- Any node's HTTP API answers for any camera: a media request for footage on another node's
-- volume is proxied to that node's http_address; the proxy learns the nodes from here.

ALTER TABLE nodes ADD COLUMN http_address text CHECK (octet_length(http_address) <= 300);
ALTER TABLE nodes ADD COLUMN wire_address text CHECK (octet_length(wire_address) <= 300);
COMMENT ON COLUMN nodes.http_address IS 'The node''s HTTP API as other nodes reach it: http://HOST:PORT or https://HOST:PORT (front door proxying).';
COMMENT ON COLUMN nodes.wire_address IS 'The node''s wire protocol address as other nodes and the playback proxy reach it: HOST:PORT or tls://HOST:PORT.';
