// The migration steps. Each table stores one record type of core/ (candidate.hpp, records.hpp);
// JSON columns hold the records' JSON fields as text. Times are seconds since the epoch (REAL),
// durations nanoseconds or seconds as the column name says, money US dollars.
#include "archive/schema.hpp"

#include "util/error.hpp"

namespace kforge {
namespace {

// Version 1: the initial schema.
constexpr const char* k_schema_v1 = R"sql(
CREATE TABLE run (
    id              INTEGER PRIMARY KEY CHECK (id = 1),  -- one run per archive; resumes update it
    run_id          TEXT NOT NULL,
    task_name       TEXT NOT NULL,
    task_spec       TEXT NOT NULL,      -- the spec text as loaded
    task_hash       TEXT NOT NULL,
    task_files      TEXT NOT NULL,      -- JSON {"path relative to the spec": "source"}
    config          TEXT NOT NULL,      -- JSON, never secrets
    device          TEXT NOT NULL,      -- JSON
    toolkit_version TEXT NOT NULL,
    kforge_version  TEXT NOT NULL,
    seed            TEXT NOT NULL,      -- decimal uint64 (SQLite integers are signed)
    state           TEXT NOT NULL,      -- running | interrupted | finished | failed
    started_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);

CREATE TABLE llm_call (
    id                  INTEGER PRIMARY KEY,
    provider            TEXT NOT NULL,
    model               TEXT NOT NULL,
    base_url            TEXT NOT NULL,
    purpose             TEXT NOT NULL,
    request             TEXT NOT NULL,  -- JSON, never the API key
    reply               TEXT NOT NULL,
    input_tokens        INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cost_usd            REAL NOT NULL,
    cost_known          INTEGER NOT NULL,
    latency_s           REAL NOT NULL,
    retries             INTEGER NOT NULL,
    status              TEXT NOT NULL,
    error               TEXT NOT NULL,
    started_at          REAL NOT NULL
);

CREATE TABLE candidate (
    id           INTEGER PRIMARY KEY,
    source       TEXT NOT NULL,
    source_hash  TEXT NOT NULL,
    parent_id    INTEGER REFERENCES candidate(id),
    island       INTEGER NOT NULL,
    generation   INTEGER NOT NULL,
    origin       TEXT NOT NULL,
    llm_call_id  INTEGER REFERENCES llm_call(id),
    note         TEXT NOT NULL,
    verdict      TEXT NOT NULL,
    message      TEXT NOT NULL,
    fitness      REAL,                  -- NULL unless correct
    best_params  TEXT NOT NULL,         -- JSON {"NAME": value}
    descriptors  TEXT NOT NULL,         -- JSON
    metrics      TEXT NOT NULL,         -- JSON
    compile_info TEXT NOT NULL,         -- JSON
    eval_seconds REAL NOT NULL,
    created_at   REAL NOT NULL
);
CREATE INDEX candidate_by_hash ON candidate(source_hash);
CREATE INDEX candidate_by_parent ON candidate(parent_id);
CREATE INDEX candidate_by_fitness ON candidate(fitness DESC) WHERE fitness IS NOT NULL;

CREATE TABLE candidate_inspiration (
    candidate_id   INTEGER NOT NULL REFERENCES candidate(id),
    position       INTEGER NOT NULL,
    inspiration_id INTEGER NOT NULL REFERENCES candidate(id),
    PRIMARY KEY (candidate_id, position)
) WITHOUT ROWID;

-- Timings. candidate_id NULL marks a baseline of the run (reference, vendor library).
CREATE TABLE measurement (
    id             INTEGER PRIMARY KEY,
    candidate_id   INTEGER REFERENCES candidate(id),
    shape_set      TEXT NOT NULL,
    shape_label    TEXT NOT NULL,
    subject        TEXT NOT NULL,
    median_ns      REAL NOT NULL,
    q1_ns          REAL NOT NULL,
    q3_ns          REAL NOT NULL,
    min_ns         REAL NOT NULL,
    samples        INTEGER NOT NULL,
    discarded      INTEGER NOT NULL,
    sm_clock_mhz   REAL NOT NULL,
    confirmed      INTEGER NOT NULL,
    below_roofline INTEGER NOT NULL,
    roofline_ns    REAL NOT NULL,
    measured_at    REAL NOT NULL
);
CREATE INDEX measurement_by_candidate ON measurement(candidate_id);

-- Every placement of a MAP-Elites cell; replaced_at is NULL while the candidate holds the cell.
CREATE TABLE elite (
    id           INTEGER PRIMARY KEY,
    island       INTEGER NOT NULL,
    cell         TEXT NOT NULL,
    candidate_id INTEGER NOT NULL REFERENCES candidate(id),
    fitness      REAL NOT NULL,
    placed_at    REAL NOT NULL,
    replaced_at  REAL
);
CREATE UNIQUE INDEX elite_current ON elite(island, cell) WHERE replaced_at IS NULL;

CREATE TABLE meta_prompt (
    id           INTEGER PRIMARY KEY,
    island       INTEGER NOT NULL,
    text         TEXT NOT NULL,
    generation   INTEGER NOT NULL,
    uses         INTEGER NOT NULL,
    improvements INTEGER NOT NULL,
    active       INTEGER NOT NULL,
    created_at   REAL NOT NULL
);

CREATE TABLE lesson (
    id           INTEGER PRIMARY KEY,
    task_name    TEXT NOT NULL,
    category     TEXT NOT NULL,
    tags         TEXT NOT NULL,         -- JSON array of strings
    text         TEXT NOT NULL,
    evidence     TEXT NOT NULL,         -- JSON
    candidate_id INTEGER REFERENCES candidate(id),
    created_at   REAL NOT NULL
);

-- The search's own state (RNG, generation counters, ...): JSON values by key.
CREATE TABLE search_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at REAL NOT NULL
) WITHOUT ROWID;
)sql";

// Version 2: which GPU measured what, for runs over several GPUs and hosts (MPI). Additive: an
// older archive read without it simply shows no GPUs.
constexpr const char* k_schema_v2 = R"sql(
CREATE TABLE gpu (
    id           INTEGER PRIMARY KEY,
    host         TEXT NOT NULL,
    mpi_rank     INTEGER NOT NULL,      -- the MPI rank that drove it; 0 on one host
    device_index INTEGER NOT NULL,      -- its index among the host's visible devices (--gpus)
    uuid         TEXT NOT NULL,
    name         TEXT NOT NULL,
    UNIQUE (host, mpi_rank, device_index, uuid)
);

-- The GPU whose numbers a candidate's row holds; candidates no GPU ran have no row here.
CREATE TABLE candidate_gpu (
    candidate_id INTEGER PRIMARY KEY REFERENCES candidate(id),
    gpu_id       INTEGER NOT NULL REFERENCES gpu(id)
);
CREATE INDEX candidate_gpu_by_gpu ON candidate_gpu(gpu_id);

-- Each GPU's share of each session (the optimize, then every resume), kept current while it runs.
CREATE TABLE gpu_session (
    session     INTEGER NOT NULL,       -- 1 for the first session that used GPUs, then 2, ...
    gpu_id      INTEGER NOT NULL REFERENCES gpu(id),
    busy_s      REAL NOT NULL,          -- requests in flight to its worker
    wall_s      REAL NOT NULL,          -- since it joined the session (until it was lost)
    evaluations INTEGER NOT NULL,       -- jobs it ran: screens, confirmations, held-out checks
    restarts    INTEGER NOT NULL,       -- worker processes replaced
    lost        INTEGER NOT NULL,       -- 1: it stopped serving during the session
    updated_at  REAL NOT NULL,
    PRIMARY KEY (session, gpu_id)
) WITHOUT ROWID;
)sql";

// Version 3: the two-phase step's plans and the techniques they claimed. Additive: an older
// archive read without it shows no plans.
constexpr const char* k_schema_v3 = R"sql(
-- One row per candidate proposed in two phases (a plan, then the code).
CREATE TABLE candidate_plan (
    candidate_id      INTEGER PRIMARY KEY REFERENCES candidate(id),
    menu              TEXT NOT NULL,    -- the optimisation menu the planner was shown
    status            TEXT NOT NULL,    -- parsed | repaired | failed
    problem           TEXT NOT NULL,    -- failed: why; repaired: what was wrong at first
    plan              TEXT NOT NULL,    -- JSON: techniques, expected_speedup, steps, why, warnings; null when failed
    calls             TEXT NOT NULL,    -- JSON array of the planner's llm_call ids, oldest first
    focus             TEXT NOT NULL,    -- the technique the search suggested ('' for none)
    predicted_speedup REAL,             -- the plan's expected speedup over the parent
    measured_speedup  REAL,             -- fitness / parent fitness, when both are known
    followed          INTEGER           -- 1, 0 (a claimed technique is missing from the code), NULL unknown
);

-- The techniques a plan claimed, in the plan's order, and whether the code shows each.
CREATE TABLE candidate_technique (
    candidate_id INTEGER NOT NULL REFERENCES candidate(id),
    position     INTEGER NOT NULL,
    technique    TEXT NOT NULL,         -- a menu item id, or 'new:<slug>' for one the planner named
    title        TEXT NOT NULL,
    on_menu      INTEGER NOT NULL,
    applied      TEXT NOT NULL,         -- applied | missing | unchecked
    PRIMARY KEY (candidate_id, position)
) WITHOUT ROWID;
CREATE INDEX candidate_technique_by_technique ON candidate_technique(technique);
)sql";

} // namespace

const std::vector<Migration>& schema_migrations()
{
    static const std::vector<Migration> k_migrations{
        {1,
         "initial schema: run, llm_call, candidate, measurement, elite, meta_prompt, lesson, "
         "search_state",
         k_schema_v1},
        {2, "gpu, candidate_gpu, gpu_session: which GPU measured what, busy time per GPU and session",
         k_schema_v2, MigrationKind::additive},
        {3, "candidate_plan, candidate_technique: two-phase plans, claimed techniques, predicted and measured speedups",
         k_schema_v3, MigrationKind::additive},
    };
    return k_migrations;
}

void check_migration_list(const std::vector<Migration>& migrations)
{
    if (migrations.empty())
        fail_runtime("internal error: the archive has no schema steps");
    for (size_t i = 0; i < migrations.size(); ++i)
        if (migrations[i].version != static_cast<int>(i) + 1)
            fail_runtime("internal error: archive schema step {} has version {}, expected {}", i,
                         migrations[i].version, i + 1);
}

} // namespace kforge
