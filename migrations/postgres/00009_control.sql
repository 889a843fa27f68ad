-- The operations state of the election backends without etcd (postgres,
-- zookeeper, redis; package control): which jobs are paused, which manual
-- runs were requested, and which replicas are alive. With the etcd backend
-- the same state lives in etcd and these tables stay empty. Every expiry is
-- judged by this database's clock.

-- +goose Up
CREATE TABLE IF NOT EXISTS {{.Schema}}.control_paused (
    job       text PRIMARY KEY,
    paused_by text NOT NULL,
    paused_at timestamptz NOT NULL
);

-- A request is one manual slot: the ledger keeps one run per (job, slot),
-- so a request delivered twice still runs once.
CREATE TABLE IF NOT EXISTS {{.Schema}}.control_trigger (
    job       text NOT NULL,
    slot      timestamptz NOT NULL,
    requested_by text NOT NULL,
    PRIMARY KEY (job, slot)
);

CREATE TABLE IF NOT EXISTS {{.Schema}}.control_replica (
    node       text PRIMARY KEY,
    entry      jsonb NOT NULL,
    expires_at timestamptz NOT NULL
);

REVOKE ALL ON {{.Schema}}.control_paused, {{.Schema}}.control_trigger, {{.Schema}}.control_replica FROM PUBLIC;

-- +goose Down
DROP TABLE IF EXISTS {{.Schema}}.control_replica;
DROP TABLE IF EXISTS {{.Schema}}.control_trigger;
DROP TABLE IF EXISTS {{.Schema}}.control_paused;
