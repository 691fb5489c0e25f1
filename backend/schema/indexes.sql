-- Indexes the API gateway would like on the platform's database.
--
-- To the platform's DBAs: these are proposals, not part of the platform's schema.
-- The gateway is correct without them (its tests run both with and without this
-- file); they only make its queries fast on the largest companies (~1M documents,
-- ~100k customers). Each one says which query it serves. Build them on a running
-- database with CREATE INDEX CONCURRENTLY (outside a transaction).

-- List invoices, no filter: the API's order is drafts first, then newest issue
-- first, ties by id; this index returns a page in that order without sorting
-- the company's documents, and also serves the from/to date filter.
CREATE INDEX IF NOT EXISTS gw_documents_company_order_idx
    ON documents (company_id, issued_at DESC NULLS FIRST, id DESC);

-- List invoices filtered by type (and optionally dates), in the same order.
-- The included columns let a type+status filter, its count and a deep page's
-- OFFSET be answered from the index alone (no table row per skipped entry:
-- 13k drafts come first in this order for the large company).
CREATE INDEX IF NOT EXISTS gw_documents_company_type_order_idx
    ON documents (company_id, doc_type, issued_at DESC NULLS FIRST, id DESC)
    INCLUDE (state, due_date);

-- List invoices filtered by status (ISSUED/OVERDUE also compare due_date and,
-- since only FT and ND can be overdue, doc_type), optionally with a type, in
-- the same order; index-only, as above (checked with EXPLAIN: an Index Only
-- Scan whose filter reads the included columns).
CREATE INDEX IF NOT EXISTS gw_documents_company_state_order_idx
    ON documents (company_id, state, issued_at DESC NULLS FIRST, id DESC)
    INCLUDE (due_date, doc_type);

-- List invoices with status OVERDUE: only issued FT and ND can be overdue, so
-- this index holds them alone, in the API's order, with their due date: a
-- page reads the issued invoices and debit notes newest first and skips those
-- not yet due, without reading the other types and states (two thirds of a
-- company's issued documents when its types are spread evenly).
CREATE INDEX IF NOT EXISTS gw_documents_company_overdue_order_idx
    ON documents (company_id, issued_at DESC NULLS FIRST, id DESC)
    INCLUDE (due_date)
    WHERE state = 'issued' AND doc_type IN ('FT', 'ND');

-- Changes since (updatedSince) of both lists: oldest change first, ties by
-- id; a cursor continues with a range condition on these columns.
CREATE INDEX IF NOT EXISTS gw_documents_company_changes_idx
    ON documents (company_id, updated_at, id);
CREATE INDEX IF NOT EXISTS gw_customers_company_changes_idx
    ON customers (company_id, updated_at, id)
    WHERE deleted_at IS NULL;

-- List clients: newest first, ties by id; only live customers are listed.
CREATE INDEX IF NOT EXISTS gw_customers_company_order_idx
    ON customers (company_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL;

-- Client search: case-insensitive substring of the name or of the normalized
-- NIF. Substring search needs trigram indexes (pg_trgm, a trusted extension).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX IF NOT EXISTS gw_customers_name_trgm_idx
    ON customers USING gin (lower(name) gin_trgm_ops)
    WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS gw_customers_nif_trgm_idx
    ON customers USING gin (upper(replace(nif, ' ', '')) gin_trgm_ops)
    WHERE deleted_at IS NULL AND nif IS NOT NULL;

-- Transmission of one invoice: newest submission of a document. The platform's
-- agt_submission_documents_document_idx already finds the rows; nothing to add.

-- Events (the detector): the AGT submissions of the companies with webhook
-- endpoints, by when they were sent and when AGT's answer was recorded.
CREATE INDEX IF NOT EXISTS gw_agt_submissions_submitted_idx
    ON agt_submissions (company_id, submitted_at);
CREATE INDEX IF NOT EXISTS gw_agt_submissions_checked_idx
    ON agt_submissions (company_id, checked_at);

-- Events feed: detection reads every company's changes (the feed holds
-- every company's events, endpoints or not), in (time, id) order across
-- companies: these serve those reads as the company-first ones above serve
-- a list of companies.
CREATE INDEX IF NOT EXISTS gw_documents_changes_idx
    ON documents (updated_at, id);
CREATE INDEX IF NOT EXISTS gw_customers_changes_idx
    ON customers (updated_at, id)
    WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS gw_agt_submissions_submitted_all_idx
    ON agt_submissions (submitted_at);
CREATE INDEX IF NOT EXISTS gw_agt_submissions_checked_all_idx
    ON agt_submissions (checked_at);
CREATE INDEX IF NOT EXISTS gw_documents_due_idx
    ON documents (due_date, id)
    WHERE state = 'issued' AND doc_type IN ('FT', 'ND');

-- Events: the issued invoices that can become overdue, by due date (read
-- once a day, when the date turns in Luanda). Document changes are read
-- through gw_documents_company_changes_idx above.
CREATE INDEX IF NOT EXISTS gw_documents_company_due_idx
    ON documents (company_id, due_date, id)
    WHERE state = 'issued' AND doc_type IN ('FT', 'ND');
