-- Runs once, when the PostgreSQL volume is first initialised (the image's
-- /docker-entrypoint-initdb.d): the live and sandbox databases, each with the
-- platform's schema and the gateway's proposed indexes, mounted read-only
-- from backend/schema (the files the gateway embeds; not copies); and the
-- gateway's own database, empty: the gateway applies its migrations.
CREATE DATABASE invoicing_live;
CREATE DATABASE invoicing_sandbox;
CREATE DATABASE gateway_history;

\connect invoicing_live
\i /platform-schema/postgres.sql
\i /platform-schema/indexes.sql

\connect invoicing_sandbox
\i /platform-schema/postgres.sql
\i /platform-schema/indexes.sql
