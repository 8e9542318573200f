// The CUPTI range-profiler call sequence (research/evaluator.md §4.3, §8.6).
#include "evaluator/worker/profile.hpp"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

namespace kforge {
namespace {

std::string cupti_text(CUptiResult result)
{
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    std::string out = text ? text : fmt::format("CUPTI error {}", static_cast<int>(result));
    if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        out += " (performance counters are restricted to admin users; see `kforge doctor`)";
    return out;
}

#define KF_CUPTI_TRY(call, label)                                                                  \
    do {                                                                                           \
        CUptiResult kf_r_ = (call);                                                                \
        if (kf_r_ != CUPTI_SUCCESS)                                                                \
            return fmt::format("{}: {}", label, cupti_text(kf_r_));                                \
    } while (0)

std::vector<const char*> metric_names()
{
    std::vector<const char*> names;
    for (const auto& [full, shortname] : profiled_metrics())
        names.push_back(full.c_str());
    return names;
}

} // namespace

const std::vector<std::pair<std::string, std::string>>& profiled_metrics()
{
    static const std::vector<std::pair<std::string, std::string>> k_metrics = {
        {"gpu__time_duration.sum", "duration_ns"},
        {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_throughput_pct"},
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_throughput_pct"},
        {"sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy_pct"},
        {"l1tex__t_sector_hit_rate.pct", "l1_hit_rate_pct"},
        {"lts__t_sector_hit_rate.pct", "l2_hit_rate_pct"},
        {"dram__bytes_read.sum", "dram_bytes_read"},
        {"dram__bytes_write.sum", "dram_bytes_written"},
    };
    return k_metrics;
}

RangeProfiler::RangeProfiler(const GpuContext& context) : m_context(context)
{
    auto setup = [&]() -> std::string {
        CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
        KF_CUPTI_TRY(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
        CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE, nullptr, 0, nullptr};
        KF_CUPTI_TRY(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
        m_chip = chip.pChipName ? chip.pChipName : "";
        CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
                                                           nullptr, m_context.context(), 0, nullptr};
        KF_CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
        m_availability.resize(avail.counterAvailabilityImageSize);
        avail.pCounterAvailabilityImage = m_availability.data();
        KF_CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");

        CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        host.pChipName = m_chip.c_str();
        host.pCounterAvailabilityImage = m_availability.data();
        KF_CUPTI_TRY(cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
        m_host = host.pHostObject;
        auto names = metric_names();
        CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        add.pHostObject = host.pHostObject;
        add.ppMetricNames = names.data();
        add.numMetrics = names.size();
        KF_CUPTI_TRY(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
        CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
        size.pHostObject = host.pHostObject;
        KF_CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
        m_config.resize(size.configImageSize);
        CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        image.pHostObject = host.pHostObject;
        image.configImageSize = m_config.size();
        image.pConfigImage = m_config.data();
        KF_CUPTI_TRY(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");
        CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        passes.configImageSize = m_config.size();
        passes.pConfigImage = m_config.data();
        KF_CUPTI_TRY(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
        m_passes = passes.numOfPasses;
        return "";
    };
    m_problem = setup();
}

RangeProfiler::~RangeProfiler()
{
    if (m_host) {
        CUpti_Profiler_Host_Deinitialize_Params deinit{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        deinit.pHostObject = static_cast<CUpti_Profiler_Host_Object*>(m_host);
        cuptiProfilerHostDeinitialize(&deinit);
    }
    CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE, nullptr};
    cuptiProfilerDeInitialize(&deinit);
}

std::map<std::string, double> RangeProfiler::profile(const std::function<void()>& prepare,
                                                     const std::function<void()>& launch, std::string& problem)
{
    std::map<std::string, double> values;
    if (!m_problem.empty()) {
        problem = m_problem;
        return values;
    }
    // Activity tracing and profiling must not overlap; tracing resumes afterwards.
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    auto run = [&]() -> std::string {
        CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
        enable.ctx = m_context.context();
        KF_CUPTI_TRY(cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
        CUpti_RangeProfiler_Object* object = enable.pRangeProfilerObject;
        struct Disable {
            CUpti_RangeProfiler_Object* object;
            ~Disable()
            {
                CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
                disable.pRangeProfilerObject = object;
                cuptiRangeProfilerDisable(&disable);
            }
        } disable_at_exit{object};

        auto names = metric_names();
        CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        size.pRangeProfilerObject = object;
        size.pMetricNames = names.data();
        size.numMetrics = names.size();
        size.maxNumOfRanges = 1;
        size.maxNumRangeTreeNodes = 1;
        KF_CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
        std::vector<uint8_t> counter_data(size.counterDataSize);
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
            CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
        init.pRangeProfilerObject = object;
        init.counterDataSize = counter_data.size();
        init.pCounterData = counter_data.data();
        KF_CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");

        CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
        config.pRangeProfilerObject = object;
        config.configSize = m_config.size();
        config.pConfig = m_config.data();
        config.counterDataImageSize = counter_data.size();
        config.pCounterDataImage = counter_data.data();
        config.range = CUPTI_UserRange;
        config.replayMode = CUPTI_UserReplay;
        config.maxRangesPerPass = 1;
        config.numNestingLevels = 1;
        config.minNestingLevel = 1;
        config.passIndex = 0;
        config.targetNestingLevel = 1;
        KF_CUPTI_TRY(cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig");

        const auto& cu = driver();
        for (size_t pass = 0; pass < m_passes + 8; ++pass) {
            prepare();
            if (cu.cuStreamSynchronize(m_context.stream()) != CUDA_SUCCESS)
                return "the stream failed before a profiling pass";
            CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
            start.pRangeProfilerObject = object;
            KF_CUPTI_TRY(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
            CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
            push.pRangeProfilerObject = object;
            push.pRangeName = "plan";
            KF_CUPTI_TRY(cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange");
            launch();
            CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
            pop.pRangeProfilerObject = object;
            KF_CUPTI_TRY(cuptiRangeProfilerPopRange(&pop), "cuptiRangeProfilerPopRange");
            CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
            stop.pRangeProfilerObject = object;
            KF_CUPTI_TRY(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
            if (stop.isAllPassSubmitted)
                break;
        }
        CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
        decode.pRangeProfilerObject = object;
        KF_CUPTI_TRY(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
        CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
        info.pCounterDataImage = counter_data.data();
        info.counterDataImageSize = counter_data.size();
        KF_CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
        if (info.numTotalRanges < 1)
            return "the profiler recorded no range";
        std::vector<double> results(names.size());
        CUpti_Profiler_Host_EvaluateToGpuValues_Params evaluate{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        evaluate.pHostObject = static_cast<CUpti_Profiler_Host_Object*>(m_host);
        evaluate.pCounterDataImage = counter_data.data();
        evaluate.counterDataImageSize = counter_data.size();
        evaluate.rangeIndex = 0;
        evaluate.ppMetricNames = names.data();
        evaluate.numMetrics = names.size();
        evaluate.pMetricValues = results.data();
        KF_CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&evaluate), "cuptiProfilerHostEvaluateToGpuValues");
        for (size_t i = 0; i < names.size(); ++i)
            values[profiled_metrics()[i].second] = results[i];
        return "";
    };
    problem = run();
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (!problem.empty())
        values.clear();
    return values;
}

} // namespace kforge
