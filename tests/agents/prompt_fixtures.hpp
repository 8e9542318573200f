// Shared fixtures for prompt tests: the rowscale task, GPU facts and candidate views.
#pragma once

#include "agents/prompt_library.hpp"
#include "agents/proposer.hpp"
#include "core/task.hpp"

namespace kforge::test {

// The templates of prompts/, loaded once.
const PromptLibrary& shipped_prompts();
// tests/fixtures/prompts/rowscale/rowscale_f32.json (two seeds with params, a held-out shape).
const Task& rowscale_task();
Json sample_hardware();
CandidateView sample_parent();       // correct, with times, metrics, descriptors and a note
CandidateView sample_inspiration(int index);
std::vector<Lesson> sample_lessons();

} // namespace kforge::test
