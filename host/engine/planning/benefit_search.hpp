// The subset search of the net-benefit policy (engine spec §8.6) over indices into the canonical
// assessment vector: search(pool, frozen) by tier, exact for small pools, then greedy by direct
// admission. Internal to benefit.cpp (split from it only to keep files short); not thread-safe.
#ifndef CTX_HOST_ENGINE_PLANNING_BENEFIT_SEARCH_HPP_
#define CTX_HOST_ENGINE_PLANNING_BENEFIT_SEARCH_HPP_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "host/engine/planning/benefit.hpp"
#include "host/engine/planning/errors.hpp"

namespace ctx::engine::planning::detail {

using Set = std::vector<int>;  // ascending indices = canonical (capability_id, source) order

inline bool sorted_contains(const std::vector<std::string>& sorted, const std::string& value) {
  return std::binary_search(sorted.begin(), sorted.end(), value);
}

class Search {
 public:
  Search(const NetBenefitPolicyConfig& policy, const std::vector<CandidateAssessment>& all)
      : p_(policy), all_(all), n_(static_cast<int>(all.size())) {
    std::map<std::string, int> key_ids;
    keys_.resize(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      for (const auto& key : all[i].candidate.coverage_keys) {
        const auto [it, inserted] = key_ids.emplace(key, static_cast<int>(key_ids.size()));
        keys_[i].push_back(it->second);
      }
    }
    complementary_.assign(all.size() * all.size(), 0);
    conflicting_.assign(all.size() * all.size(), 0);
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j) {
        if (i == j) continue;
        const auto& a = all[static_cast<std::size_t>(i)].candidate;
        const auto& b = all[static_cast<std::size_t>(j)].candidate;
        const std::size_t cell =
            static_cast<std::size_t>(i) * all.size() + static_cast<std::size_t>(j);
        complementary_[cell] = sorted_contains(b.complements, a.capability_id) &&
                               sorted_contains(a.complements, b.capability_id);
        conflicting_[cell] = sorted_contains(b.conflicts, a.capability_id) ||
                             sorted_contains(a.conflicts, b.capability_id);
      }
    }
  }

  // Search evaluations of the last search_tier call.
  std::int64_t evaluations = 0;

  // search(pool, frozen) of §8.6 step 3.
  Set search_tier(const Set& pool, const Set& frozen, std::int64_t limit) {
    evaluations = 0;
    if (static_cast<std::int64_t>(frozen.size()) >= limit) return frozen;
    Set current = greedy_fill(pool, frozen, {}, limit);
    while (true) {
      Set movable;
      for (int i : current) {
        if (!member(frozen, i)) movable.push_back(i);
      }
      const std::int64_t current_utility = utility(current);
      std::vector<Set> improving;
      const int m = static_cast<int>(movable.size());
      for (int size = 1; size <= m; ++size) {
        std::vector<int> pick(static_cast<std::size_t>(size));
        for (int k = 0; k < size; ++k) pick[static_cast<std::size_t>(k)] = k;
        while (true) {
          Set removed;
          for (int k : pick) removed.push_back(movable[static_cast<std::size_t>(k)]);
          Set base;
          for (int i : current) {
            if (!member(removed, i)) base.push_back(i);
          }
          base = prune(base, frozen);
          Set neighbour = greedy_fill(pool, base, removed, limit);
          if (evaluations > kMaxSearchEvaluations) {
            throw BenefitValidationError("search exceeded its deterministic evaluation bound");
          }
          if (meets_threshold(neighbour) && utility(neighbour) > current_utility) {
            improving.push_back(std::move(neighbour));
          }
          // next combination in lexicographic order
          int k = size - 1;
          while (k >= 0 && pick[static_cast<std::size_t>(k)] == m - size + k) --k;
          if (k < 0) break;
          ++pick[static_cast<std::size_t>(k)];
          for (int j = k + 1; j < size; ++j) {
            pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(j - 1)] + 1;
          }
        }
      }
      if (improving.empty()) break;
      current = *std::min_element(improving.begin(), improving.end(),
                                  [&](const Set& a, const Set& b) { return solution_less(a, b); });
    }
    if (!meets_threshold(current)) {
      throw BenefitValidationError("search terminated with a below-threshold retained capability");
    }
    return current;
  }

  std::int64_t leave_one_out(int item, const Set& set) const {
    Set without;
    for (int i : set) {
      if (i != item) without.push_back(i);
    }
    return utility(set) - utility(without);
  }

 private:
  bool comp(int i, int j) const {
    return complementary_[static_cast<std::size_t>(i) * all_.size() +
                          static_cast<std::size_t>(j)] != 0;
  }
  bool conf(int i, int j) const {
    return conflicting_[static_cast<std::size_t>(i) * all_.size() + static_cast<std::size_t>(j)] !=
           0;
  }
  const CandidateAssessment& a(int i) const { return all_[static_cast<std::size_t>(i)]; }
  static bool member(const Set& set, int i) {
    return std::binary_search(set.begin(), set.end(), i);
  }
  static Set with(const Set& set, int i) {
    Set out = set;
    out.insert(std::upper_bound(out.begin(), out.end(), i), i);
    return out;
  }

  std::int64_t utility(const Set& set) const {
    std::int64_t total = 0;
    std::map<int, int> coverage;
    for (int i : set) {
      total += a(i).individual_net_benefit_u;
      for (int key : keys_[static_cast<std::size_t>(i)]) ++coverage[key];
    }
    std::int64_t overlap = 0;
    for (const auto& [key, count] : coverage) overlap += count - 1;
    std::int64_t pairs = 0;
    for (std::size_t x = 0; x < set.size(); ++x) {
      for (std::size_t y = x + 1; y < set.size(); ++y) pairs += comp(set[x], set[y]) ? 1 : 0;
    }
    return total + static_cast<std::int64_t>(coverage.size()) * p_.new_coverage_bonus_u_per_key -
           overlap * p_.overlap_penalty_u_per_key + pairs * p_.complementarity_bonus_u;
  }

  bool meets_threshold(const Set& set) const {
    for (int i : set) {
      if (leave_one_out(i, set) < p_.minimum_marginal_net_benefit_u) return false;
    }
    return true;
  }

  bool can_add(int candidate, const Set& selected) const {
    for (int prior : selected) {
      if (conf(candidate, prior)) return false;
    }
    const auto& key = a(candidate).candidate.equivalence_key;
    if (!key) return true;
    for (int prior : selected) {
      if (a(prior).candidate.equivalence_key == key && !comp(candidate, prior)) return false;
    }
    return true;
  }

  std::optional<std::int64_t> marginal(int candidate, const Set& selected) const {
    if (!can_add(candidate, selected)) return std::nullopt;
    std::set<int> covered;
    std::int64_t complements = 0;
    for (int prior : selected) {
      for (int key : keys_[static_cast<std::size_t>(prior)]) covered.insert(key);
      complements += comp(candidate, prior) ? 1 : 0;
    }
    std::int64_t fresh = 0;
    std::int64_t shared = 0;
    for (int key : keys_[static_cast<std::size_t>(candidate)]) {
      (covered.count(key) ? shared : fresh) += 1;
    }
    return a(candidate).individual_net_benefit_u + fresh * p_.new_coverage_bonus_u_per_key -
           shared * p_.overlap_penalty_u_per_key + complements * p_.complementarity_bonus_u;
  }

  bool preserves_retained_value(int candidate, const Set& selected, std::int64_t marginal_u,
                                const std::map<int, int>& coverage_counts,
                                const std::vector<std::int64_t>& retained) const {
    if (marginal_u < p_.minimum_marginal_net_benefit_u) return false;
    const auto& cand_keys = keys_[static_cast<std::size_t>(candidate)];
    for (std::size_t x = 0; x < selected.size(); ++x) {
      const int prior = selected[x];
      std::int64_t contribution = retained[x];
      if (comp(candidate, prior)) contribution += p_.complementarity_bonus_u;
      const auto& prior_keys = keys_[static_cast<std::size_t>(prior)];
      std::int64_t uniquely_covered_overlap = 0;
      for (int key : cand_keys) {
        if (std::find(prior_keys.begin(), prior_keys.end(), key) == prior_keys.end()) continue;
        const auto it = coverage_counts.find(key);
        if (it != coverage_counts.end() && it->second == 1) ++uniquely_covered_overlap;
      }
      contribution -= uniquely_covered_overlap *
                      (p_.new_coverage_bonus_u_per_key + p_.overlap_penalty_u_per_key);
      if (contribution < p_.minimum_marginal_net_benefit_u) return false;
    }
    return true;
  }

  // The valid admission minimising (-marginal, -individual, -relevance, id, source), or -1.
  int best_direct_admission(const Set& pool, const Set& selected, const Set& excluded) {
    std::map<int, int> coverage_counts;
    for (int i : selected) {
      for (int key : keys_[static_cast<std::size_t>(i)]) ++coverage_counts[key];
    }
    std::vector<std::int64_t> retained;
    for (int i : selected) retained.push_back(leave_one_out(i, selected));
    int winner = -1;
    std::int64_t winner_marginal = 0;
    for (int candidate : pool) {
      if (member(selected, candidate) || member(excluded, candidate)) continue;
      ++evaluations;
      const auto m = marginal(candidate, selected);
      if (!m || !preserves_retained_value(candidate, selected, *m, coverage_counts, retained)) {
        continue;
      }
      if (winner < 0) {
        winner = candidate;
        winner_marginal = *m;
        continue;
      }
      const auto key = [&](int i, std::int64_t mu) {
        return std::make_tuple(-mu, -a(i).individual_net_benefit_u, -a(i).candidate.relevance_ppm,
                               std::cref(a(i).capability_id()), std::cref(a(i).source_digest()));
      };
      if (key(candidate, *m) < key(winner, winner_marginal)) {
        winner = candidate;
        winner_marginal = *m;
      }
    }
    return winner;
  }

  Set greedy_fill(const Set& pool, const Set& selected, const Set& excluded, std::int64_t limit) {
    Set current = selected;
    while (static_cast<std::int64_t>(current.size()) < limit) {
      const int winner = best_direct_admission(pool, current, excluded);
      if (winner < 0) break;
      current = with(current, winner);
    }
    return current;
  }

  std::vector<std::string> ids(const Set& set) const {
    std::vector<std::string> out;
    for (int i : set) out.push_back(a(i).capability_id());
    return out;
  }
  std::vector<std::string> sources(const Set& set) const {
    std::vector<std::string> out;
    for (int i : set) out.push_back(a(i).source_digest());
    return out;
  }

  bool solution_less(const Set& x, const Set& y) const {
    return std::make_tuple(-utility(x), x.size(), ids(x), sources(x)) <
           std::make_tuple(-utility(y), y.size(), ids(y), sources(y));
  }

  Set prune(const Set& selected, const Set& frozen) const {
    Set current = selected;
    while (!current.empty() && !meets_threshold(current)) {
      bool any = false;
      Set best;
      std::int64_t best_utility = 0;
      for (int item : current) {
        if (member(frozen, item)) continue;
        Set rest;
        for (int i : current) {
          if (i != item) rest.push_back(i);
        }
        const std::int64_t u = utility(rest);
        if (!any || std::make_tuple(-u, ids(rest)) < std::make_tuple(-best_utility, ids(best))) {
          any = true;
          best = std::move(rest);
          best_utility = u;
        }
      }
      if (!any) return frozen;
      current = std::move(best);
    }
    return current;
  }

  const NetBenefitPolicyConfig& p_;
  const std::vector<CandidateAssessment>& all_;
  int n_;
  std::vector<std::vector<int>> keys_;
  std::vector<char> complementary_;
  std::vector<char> conflicting_;
};

}  // namespace ctx::engine::planning::detail

#endif  // CTX_HOST_ENGINE_PLANNING_BENEFIT_SEARCH_HPP_
