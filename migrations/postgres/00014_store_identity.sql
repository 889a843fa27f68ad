-- The store's identity: a random id created with the scheduler's tables, one
-- per schema. Replicas publish it and the first leader records it beside the
-- election, so that a replica configured with another store (another schema,
-- another database) refuses to lead instead of keeping a ledger of its own. A
-- copy of these tables (a dump restored, a server upgraded, a standby
-- promoted) keeps it, so such a move needs no other step.

-- +goose Up
CREATE TABLE IF NOT EXISTS {{.Schema}}.store_identity (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id         text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO {{.Schema}}.store_identity (id) VALUES (gen_random_uuid()::text) ON CONFLICT DO NOTHING;
REVOKE ALL ON {{.Schema}}.store_identity FROM PUBLIC;

-- +goose Down
DROP TABLE IF EXISTS {{.Schema}}.store_identity;
