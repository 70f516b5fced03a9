#!/bin/sh
# One-shot schema setup for Temporal on PostgreSQL (run by the admin-tools container in docker-compose.yml).
# Idempotent: create-database tolerates an existing database, update-schema applies only missing versions.
set -eu
tool() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" "$@"; }
for db in temporal temporal_visibility; do
  case "$db" in temporal) dir=temporal ;; *) dir=visibility ;; esac
  tool --db "$db" create-database || echo "database $db exists"
  tool --db "$db" setup-schema -v 0.0 || echo "schema of $db already set up"
  tool --db "$db" update-schema -d "/etc/temporal/schema/postgresql/v12/$dir/versioned"
done
# The agent workers' blob store (JAI_BLOB_STORE in docker-compose.yml): they create their table in it on first use.
tool --db jai_blobs create-database || echo "database jai_blobs exists"
echo "Temporal schema is up to date"
