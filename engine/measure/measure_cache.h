#pragma once

#include "measure/measure_report.h"

#include <optional>
#include <string>

namespace organ {

// Stored measurements in the user's cache folder, one JSON file per (file, parameters).
// An entry is found only for the same path, size, modification time and header bytes of
// every file of the model, and the same Z-measure version and sample: a changed file is
// never served stale results.
class MeasurementCache {
public:
    // $ORGAN_CACHE_DIR, else $XDG_CACHE_HOME/organ-workbench, else ~/.cache/organ-workbench.
    static std::string defaultFolder();

    explicit MeasurementCache(std::string folder = defaultFolder());
    const std::string& folder() const { return m_folder; }

    // The entry's file name for this model and these parameters.
    std::string keyFor(const GgufModel& model, const ZParams& params) const;

    // Fills m.measurement (and aggregates it) from a stored entry; false when there is none,
    // when it is for another model, or when it is damaged: its checksum does not match its
    // content, or a result is inconsistent (see inconsistency() in zmeasure.h). A damaged
    // entry sets `warning` (naming the entry and what is wrong) and is measured afresh.
    // Entries are read without blocking and only when they are regular files.
    bool load(MeasuredModel& m, const ZParams& params, std::string* warning = nullptr) const;
    // Writes the entry through SafeOutput (replacing a damaged entry of any kind); failures
    // are reported, never thrown.
    bool store(const MeasuredModel& m, std::string* error = nullptr) const;

private:
    std::string m_folder;
};

// What measureWithCache did besides filling the measurement.
struct CachedMeasurement {
    JobResult result;         // Ok (measured or from the cache), Failed or Cancelled
    std::string cacheWarning; // a damaged entry that was measured afresh
    std::string storeError;   // the result could not be stored (the measurement stands)
};

// The one workflow of the command line and the window: fills m.measurement from `cache` when
// it holds an entry for this model and options.params, else measures the model (progress,
// per-tensor results through options.onTensor, stop) and stores the result. `cache` null:
// always measured, nothing stored. An entry served from the cache sends no per-tensor results.
CachedMeasurement measureWithCache(MeasuredModel& m, const MeasureOptions& options,
                                   const MeasurementCache* cache, const ProgressFn& progress = {},
                                   const StopToken* stop = nullptr);

} // namespace organ
