-- Application tables of the built-in example jobs. They live in public, not
-- in the scheduler's schema, and may already exist from an earlier setup:
-- IF NOT EXISTS keeps their data. Every row carries the fencing token of the
-- run that wrote it.

-- +goose Up
CREATE TABLE IF NOT EXISTS public.invoices (
    client_id  integer,
    month      text,
    amount     numeric(12,2),
    token      bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client_id, month)
);

-- Barcode scans, appended by the warehouse; the stock job reads them.
CREATE TABLE IF NOT EXISTS public.stock_scans (
    scan_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sku        text NOT NULL,
    location   text NOT NULL DEFAULT '',
    quantity   integer NOT NULL,
    scanned_at timestamptz NOT NULL DEFAULT now()
);

-- One row per SKU, rebuilt as a whole by the stock job in one fenced
-- transaction.
CREATE TABLE IF NOT EXISTS public.stock_report (
    sku        text PRIMARY KEY,
    quantity   bigint NOT NULL,
    scans      bigint NOT NULL,
    token      bigint NOT NULL,
    built_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
-- Application data is kept: nothing to undo.
SELECT 1;
