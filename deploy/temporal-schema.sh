#!/bin/sh
# Creates (or upgrades) Temporal's two PostgreSQL databases: history and visibility.
set -eu
for db in temporal temporal_visibility; do
  schema=temporal; [ "$db" = temporal_visibility ] && schema=visibility
  temporal-sql-tool --plugin postgres12 --ep postgresql -u "$POSTGRES_USER" -p 5432 --db "$db" create || true
  temporal-sql-tool --plugin postgres12 --ep postgresql -u "$POSTGRES_USER" -p 5432 --db "$db" setup-schema -v 0.0 || true
  temporal-sql-tool --plugin postgres12 --ep postgresql -u "$POSTGRES_USER" -p 5432 --db "$db" \
    update-schema -d "/etc/temporal/schema/postgresql/v12/$schema/versioned"
done
