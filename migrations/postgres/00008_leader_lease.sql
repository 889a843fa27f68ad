-- The leader lease of the postgres election backend (package pglease): one
-- row per election, whose expiry is judged by this database's clock alone.
-- A grant raises token above both the row's last token and every fence in
-- job_fence, in the statement that grants the lease, so a new term's token
-- can never be refused by a fence that an older term, or an earlier
-- coordinator, left behind.

-- +goose Up
CREATE TABLE IF NOT EXISTS {{.Schema}}.leader_lease (
    name       text PRIMARY KEY,
    node       text,
    holder     text,
    token      bigint NOT NULL CHECK (token > 0),
    since      timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

REVOKE ALL ON {{.Schema}}.leader_lease FROM PUBLIC;

-- +goose Down
DROP TABLE IF EXISTS {{.Schema}}.leader_lease;
