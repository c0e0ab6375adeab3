#pragma once
/// \file
/// The elements of a list without repeats, each kept where it first occurs:
/// how a lease or hold over repeated handles collapses them (§7.2). Short
/// lists are scanned; longer ones are checked through a sorted copy of
/// their keys (or one pass when the keys only grow), so that a lease of a
/// hundred values costs no ten thousand comparisons.

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace fhr {

/// `items` in order, every element whose key an earlier element has dropped.
/// `key(item)` must be totally ordered (operator<) and equal exactly when the
/// items are the same element.
template <typename T, typename KeyOf>
std::vector<T> first_occurrences(std::span<const T> items, KeyOf key) {
  if (items.size() <= 1) return std::vector<T>(items.begin(), items.end());
  std::vector<T> out;
  out.reserve(items.size());
  constexpr std::size_t kScanned = 16; // below this a scan beats sorting
  if (items.size() <= kScanned) {
    for (const T &item : items)
      if (std::find_if(out.begin(), out.end(), [&](const T &o) { return key(o) == key(item); }) == out.end())
        out.push_back(item);
    return out;
  }
  // Handles usually come in the order their values were registered: keys
  // that only grow have no repeats, and one pass says so.
  bool increasing = true;
  for (std::size_t i = 1; i < items.size() && increasing; ++i)
    increasing = key(items[i - 1]) < key(items[i]);
  if (increasing) {
    out.assign(items.begin(), items.end());
    return out;
  }
  using Key = decltype(key(items[0]));
  std::vector<std::pair<Key, std::size_t>> sorted; // (key, position)
  sorted.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    sorted.emplace_back(key(items[i]), i);
  std::sort(sorted.begin(), sorted.end());
  // Within a run of equal keys the first position is the first occurrence.
  std::vector<bool> repeat(items.size(), false);
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first) repeat[sorted[i].second] = true;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (!repeat[i]) out.push_back(items[i]);
  return out;
}

} // namespace fhr
