-- SQLite translation of postgres.sql (the platform's schema), for the gateway's
-- embedded mode and for tests that run without PostgreSQL. Same tables, columns,
-- keys and constraints; only the types are translated, by these rules, which the
-- adapter relies on:
--
--   * uuid        -> TEXT, lower case with hyphens, so text order = byte order
--                    (the same order as PostgreSQL's uuid);
--   * timestamptz -> TEXT, UTC, fixed width '2026-03-01T09:15:02.120000Z', so
--                    text order = time order and microseconds survive;
--   * date        -> TEXT 'YYYY-MM-DD';
--   * numeric     -> TEXT holding the decimal's text ('1500.00', '12.3456'):
--                    a NUMERIC or REAL column would turn money into binary
--                    floating point and lose exactness;
--   * jsonb       -> TEXT holding valid JSON;
--   * char/varchar-> TEXT (lengths are not enforced by SQLite).
--
-- STRICT tables refuse values of the wrong storage class instead of converting.

CREATE TABLE companies (
    id          TEXT NOT NULL PRIMARY KEY CHECK (id = lower(id) AND length(id) = 36),
    legal_name  TEXT NOT NULL,
    nif         TEXT NOT NULL UNIQUE,
    status      TEXT NOT NULL DEFAULT 'active'
                CHECK (status IN ('active', 'suspended')),
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
                CHECK (length(created_at) = 27 AND created_at LIKE '____-__-__T__:__:__.______Z')
) STRICT;

CREATE TABLE customers (
    id          TEXT NOT NULL PRIMARY KEY CHECK (id = lower(id) AND length(id) = 36),
    company_id  TEXT NOT NULL REFERENCES companies (id),
    name        TEXT NOT NULL,
    nif         TEXT,
    email       TEXT,
    phone       TEXT,
    address     TEXT,
    kind        TEXT CHECK (kind IN ('C', 'I')),
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
                CHECK (length(created_at) = 27 AND created_at LIKE '____-__-__T__:__:__.______Z'),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
                CHECK (length(updated_at) = 27 AND updated_at LIKE '____-__-__T__:__:__.______Z'),
    deleted_at  TEXT
                CHECK (deleted_at IS NULL OR (length(deleted_at) = 27 AND deleted_at LIKE '____-__-__T__:__:__.______Z'))
) STRICT;

-- One live customer per NIF within a company. Deleted customers do not count.
CREATE UNIQUE INDEX customers_company_nif_key
    ON customers (company_id, nif)
    WHERE nif IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX customers_company_created_idx ON customers (company_id, created_at);

CREATE TABLE documents (
    id             TEXT    NOT NULL PRIMARY KEY CHECK (id = lower(id) AND length(id) = 36),
    company_id     TEXT    NOT NULL REFERENCES companies (id),
    doc_type       TEXT    NOT NULL CHECK (doc_type IN ('FT', 'FR', 'FS', 'NC', 'ND', 'PF')),
    series         TEXT    NOT NULL,
    seq            INTEGER NOT NULL CHECK (seq > 0),
    state          TEXT    NOT NULL
                   CHECK (state IN ('draft', 'issued', 'paid', 'cancelled')),
    customer_id    TEXT    REFERENCES customers (id),
    customer_name  TEXT    NOT NULL,
    customer_nif   TEXT,
    currency       TEXT    NOT NULL DEFAULT 'AOA',
    net_total      TEXT    NOT NULL,
    tax_total      TEXT    NOT NULL,
    gross_total    TEXT    NOT NULL,
    issued_at      TEXT
                   CHECK (issued_at IS NULL OR (length(issued_at) = 27 AND issued_at LIKE '____-__-__T__:__:__.______Z')),
    due_date       TEXT    CHECK (due_date IS NULL OR (length(due_date) = 10 AND due_date LIKE '____-__-__')),
    related_id     TEXT    REFERENCES documents (id),
    created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
                   CHECK (length(created_at) = 27 AND created_at LIKE '____-__-__T__:__:__.______Z'),
    updated_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
                   CHECK (length(updated_at) = 27 AND updated_at LIKE '____-__-__T__:__:__.______Z'),
    UNIQUE (company_id, doc_type, series, seq)
) STRICT;
CREATE INDEX documents_company_issued_idx ON documents (company_id, issued_at);

CREATE TABLE document_lines (
    document_id  TEXT    NOT NULL REFERENCES documents (id),
    line_no      INTEGER NOT NULL,
    description  TEXT    NOT NULL,
    quantity     TEXT    NOT NULL,
    unit_price   TEXT    NOT NULL,
    tax_rate     TEXT    NOT NULL,
    line_total   TEXT    NOT NULL,
    PRIMARY KEY (document_id, line_no)
) STRICT;

CREATE TABLE agt_submissions (
    id            TEXT    NOT NULL PRIMARY KEY CHECK (id = lower(id) AND length(id) = 36),
    company_id    TEXT    NOT NULL REFERENCES companies (id),
    request_id    TEXT,
    submitted_at  TEXT    NOT NULL
                  CHECK (length(submitted_at) = 27 AND submitted_at LIKE '____-__-__T__:__:__.______Z'),
    result_code   INTEGER,
    checked_at    TEXT
                  CHECK (checked_at IS NULL OR (length(checked_at) = 27 AND checked_at LIKE '____-__-__T__:__:__.______Z'))
) STRICT;

CREATE TABLE agt_submission_documents (
    submission_id  TEXT NOT NULL REFERENCES agt_submissions (id),
    document_id    TEXT NOT NULL REFERENCES documents (id),
    status         TEXT CHECK (status IN ('V', 'I')),
    errors         TEXT CHECK (errors IS NULL OR json_valid(errors)),
    PRIMARY KEY (submission_id, document_id)
) STRICT;
CREATE INDEX agt_submission_documents_document_idx ON agt_submission_documents (document_id);
