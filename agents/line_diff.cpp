// Unified diffs by longest common subsequence, after trimming the common prefix and suffix (kernel
// edits are usually local, so the quadratic part stays small); a middle too large to compare is
// shown as removed-then-added.
#include "agents/line_diff.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_max_middle_lines = 3000;

struct Op {
    char kind;      // ' ', '-', '+'
    size_t a, b;    // line numbers (0-based) in before/after where the op stands
};

std::vector<std::string> lines_of(std::string_view text)
{
    std::vector<std::string> lines = split(text, '\n');
    if (!text.empty() && text.back() == '\n')
        lines.pop_back();
    if (text.empty())
        lines.clear();
    return lines;
}

void diff_middle(const std::vector<std::string>& a, const std::vector<std::string>& b, size_t a0, size_t a1,
                 size_t b0, size_t b1, std::vector<Op>& ops)
{
    size_t n = a1 - a0, m = b1 - b0;
    if (n > k_max_middle_lines || m > k_max_middle_lines || n == 0 || m == 0) {
        for (size_t i = a0; i < a1; ++i)
            ops.push_back({'-', i, b0});
        for (size_t j = b0; j < b1; ++j)
            ops.push_back({'+', a1, j});
        return;
    }
    // lcs[i][j]: LCS length of a[a0+i..a1) and b[b0+j..b1).
    std::vector<uint16_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint16_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            at(i, j) = a[a0 + i] == b[b0 + j] ? static_cast<uint16_t>(at(i + 1, j + 1) + 1)
                                                : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
            ops.push_back({' ', a0 + i, b0 + j});
            ++i;
            ++j;
        } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
            ops.push_back({'-', a0 + i, b0 + j});
            ++i;
        } else {
            ops.push_back({'+', a0 + i, b0 + j});
            ++j;
        }
    }
}

} // namespace

std::string unified_diff(std::string_view before, std::string_view after, size_t context, size_t max_lines)
{
    std::vector<std::string> a = lines_of(before), b = lines_of(after);
    size_t prefix = 0;
    while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
        ++prefix;
    size_t suffix = 0;
    while (suffix < a.size() - prefix && suffix < b.size() - prefix && a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
        ++suffix;
    if (prefix == a.size() && prefix == b.size())
        return "";
    std::vector<Op> ops;
    for (size_t i = 0; i < prefix; ++i)
        ops.push_back({' ', i, i});
    diff_middle(a, b, prefix, a.size() - suffix, prefix, b.size() - suffix, ops);
    for (size_t k = suffix; k > 0; --k)
        ops.push_back({' ', a.size() - k, b.size() - k});

    size_t changed = static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind != ' '; }));
    if (changed > max_lines)
        return fmt::format("({} lines changed: too many to show; {} lines before, {} after)", changed, a.size(), b.size());

    std::vector<std::string> out;
    size_t k = 0;
    while (k < ops.size()) {
        while (k < ops.size() && ops[k].kind == ' ')
            ++k;
        if (k == ops.size())
            break;
        size_t begin = k > context ? k - context : 0;
        size_t end = k;
        // Extend over changes separated by at most 2 * context unchanged lines.
        for (size_t scan = k; scan < ops.size(); ++scan) {
            if (ops[scan].kind != ' ')
                end = scan + 1;
            else if (scan - end >= 2 * context)
                break;
        }
        end = std::min(ops.size(), end + context);
        size_t a_count = 0, b_count = 0;
        std::vector<std::string> body;
        for (size_t x = begin; x < end; ++x) {
            const Op& op = ops[x];
            a_count += op.kind != '+';
            b_count += op.kind != '-';
            body.push_back(std::string(1, op.kind) + (op.kind == '+' ? b[op.b] : a[op.a]));
        }
        out.push_back(fmt::format("@@ -{},{} +{},{} @@", ops[begin].a + (a_count ? 1 : 0), a_count,
                                  ops[begin].b + (b_count ? 1 : 0), b_count));
        out.insert(out.end(), body.begin(), body.end());
        k = end;
    }
    return join(out, "\n");
}

} // namespace kforge
