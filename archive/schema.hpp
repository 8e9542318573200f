// The archive's schema as a list of forward migrations.
//
// Version 1 is the initial schema; each later step turns version N-1 into N. Creating an archive
// applies every step from nothing; opening an older archive for writing applies the missing steps,
// each in its own transaction together with its row in `schema_version`, so an interrupted upgrade
// leaves the archive at the last complete version. An archive newer than the steps this binary
// knows is refused: an old kforge must never write rows a newer one would misread.
//
// Steps are append-only: once released, a step's SQL never changes; fixes are new steps.
//
// An additive step only adds tables (or nullable columns) that every reader can do without: a
// read-only open of an archive that lacks only additive steps is allowed, and the queries over
// what those steps add return nothing for it. Any other step makes readers refuse older archives
// until a writer (`kforge resume`) has upgraded them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// SQLite's application_id of a kforge archive ("kfor"): tells our files from other databases.
inline constexpr int32_t k_archive_application_id = 0x6b666f72;

enum class MigrationKind
{
    rebuilding, // readers need it applied
    additive    // readers of older archives do without it (see above)
};

struct Migration
{
    int version = 0;     // the schema version this step produces (1 for the initial schema)
    std::string summary; // one line, stored in schema_version
    std::string sql;     // statements; run in one transaction with the version bump
    MigrationKind kind = MigrationKind::rebuilding;
};

// The schema version that added the GPU tables (gpu, candidate_gpu, gpu_session).
inline constexpr int k_schema_gpu_tables = 2;
// The schema version that added the plan tables (candidate_plan, candidate_technique).
inline constexpr int k_schema_plan_tables = 3;

// The steps this kforge knows, versions 1..N in order.
const std::vector<Migration>& schema_migrations();

// Throws Error(runtime) unless `migrations` is non-empty and numbered 1..N in order (a bug).
void check_migration_list(const std::vector<Migration>& migrations);

} // namespace kforge
