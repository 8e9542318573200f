// The end-of-run summary as one JSON document (what `kforge optimize --json` prints; the CLI
// renders the same document as text): why the run stopped, the best kernel with its time per bench
// shape against every baseline, its held-out result, verdict counts, model calls and cost, GPU use,
// and where the archive is with the commands that export, inspect and continue it.
#pragma once

#include "archive/archive.hpp"
#include "search/search.hpp"

namespace kforge {

Json build_run_summary(const Archive& archive, const SearchOutcome& outcome);

} // namespace kforge
