/*
 * Layout of the simulated GPU's shared-memory segment (docs/simgpu.md).
 *
 * Everything the model needs lives here, not in any one process, so that
 * any attached process can advance the whole GPU exactly: stream queues,
 * the kernels running now, events, the kernel profiles and the co-run
 * samples. Fixed-size arrays, no pointers: each process maps the segment at
 * its own address. A process touches it only while holding `lock`, a
 * process-shared robust mutex, so that a process killed while holding it
 * leaves the others a consistent-enough state to reap it (the owner's
 * streams and events are freed when its pid is gone).
 *
 * The header's magic is written last by the creator, with release order:
 * a segment whose magic is not SIM_MAGIC is still being built (or its
 * creator died), and one whose version differs is refused.
 */
#ifndef MOSAIC_TESTS_SIMGPU_SHM_H
#define MOSAIC_TESTS_SIMGPU_SHM_H

#include <pthread.h>
#include <stdint.h>

#define SIM_MAGIC 0x31555047494d534dull /* "MSIMGPU1" little-endian */
/* Bump on any change of this file's layout or of a field's meaning. */
#define SIM_VERSION 2u

#define SIM_STREAMS 128     /* streams of all processes together */
#define SIM_RING 512        /* queued operations per stream */
#define SIM_EVENTS 1024
#define SIM_KERNELS 512     /* profiled kernel keys */
#define SIM_KEYLEN 400      /* longest profile key kept, NUL included */
#define SIM_VARIANTS 128
#define SIM_VARLEN 64
#define SIM_SAMPLES 16      /* co-run samples per ordered variant pair */
#define SIM_MASK_WORDS 4    /* SM sets of up to 256 SMs */
#define SIM_GPU_SMS 132     /* the H200's SMs: the whole GPU */
#define SIM_CURVE 12        /* measured SM counts per variant */
#define SIM_PSAMPLES 48     /* partitioned co-run samples per variant pair */

enum sim_op_type {
    SIM_OP_KERNEL = 1,
    SIM_OP_RECORD,      /* cuEventRecord: value = the record's sequence */
    SIM_OP_WAIT_EVENT,  /* cuStreamWaitEvent: value = sequence to wait for */
    SIM_OP_WRITE_VALUE, /* done by the owning process: host memory */
    SIM_OP_WAIT_VALUE,  /* checked by the owning process: host memory */
};

struct sim_op {
    uint32_t type;
    uint32_t how;      /* WAIT_VALUE: enum sim_wait; event ops: its gen */
    int32_t kernel;    /* KERNEL: index into kernels[], -1 unprofiled */
    int32_t event;     /* RECORD / WAIT_EVENT */
    uint32_t is64;
    uint32_t pad;
    double work_ns;    /* KERNEL: isolated duration, scaled */
    uint64_t addr;     /* VALUE ops: host address in the owner */
    uint64_t value;
};

enum sim_slot_state { SIM_FREE = 0, SIM_USED, SIM_RELEASED };

struct sim_stream {
    int32_t owner;     /* pid */
    uint32_t state;    /* enum sim_slot_state; RELEASED frees when empty */
    uint64_t head, tail; /* ops[head % SIM_RING] is the next to run */
    /* The head kernel while it runs (running != 0). */
    uint32_t running;
    /* The owner's CUDA_MPS_CLIENT_PRIORITY (0 normal, 1 below normal): a
     * lower value dispatches first when two kernels meet. */
    int32_t priority;
    double start_ns;   /* when it started on the GPU */
    /* Drawn at its start and kept for its whole run, so that recomputing
     * rates never reorders or redraws a pair: its dispatch time (start plus
     * a uniform draw within the measured jitter; the earlier dispatched of
     * two is "first") and the draw that picks a measured repeat. */
    double dispatch_ns;
    uint64_t draw;
    double rem_ns;     /* isolated work left, ns of scaled time */
    /* A green-context stream's SMs (bit i: SM i) and their number; sms 0:
     * the whole GPU. */
    uint64_t sm_mask[SIM_MASK_WORDS];
    uint32_t sms;
    uint32_t pad_sms;
    double rate;       /* work done per ns now: 1 / current slowdown */
    struct sim_op ops[SIM_RING];
};

struct sim_event {
    int32_t owner;
    uint32_t used;
    /* Bumped at each reuse of the slot, so that an operation queued for a
     * destroyed event never touches the next event in the slot. */
    uint32_t gen;
    uint32_t pad;
    uint64_t recorded;  /* records issued */
    uint64_t completed; /* the last record the GPU reached */
    double time_ns;     /* when it reached it */
};

struct sim_kernel {
    char key[SIM_KEYLEN];
    double dur_ns;      /* isolated, unscaled, from the profile */
    double dram_bps;    /* (read + write bytes) / duration */
    double occupancy;   /* share of the GPU's block slots its grid fills */
    int32_t variant;    /* index into variants[], -1 if never co-run */
    uint32_t pad;
    double blocks;      /* thread blocks of its grid */
    double blocks_per_sm; /* resident at once on one SM (the profile's) */
};

/* A variant's measured isolated time on green contexts of sms[i] SMs
 * (us[i], microseconds, sorted by sms; the whole GPU is SIM_GPU_SMS). */
struct sim_curve {
    uint32_t n;
    uint32_t pad;
    uint32_t sms[SIM_CURVE];
    double us[SIM_CURVE];
};

/* Partitioned co-runs of variant i (on sms[k] SMs) beside variant j on the
 * disjoint rest: each one's slowdown over its isolated time on its own
 * partition, one repeat per sample. */
struct sim_ppair {
    uint32_t n;
    uint16_t sms[SIM_PSAMPLES];
    float self[SIM_PSAMPLES];
    float other[SIM_PSAMPLES];
};

/* Co-run samples of variant i started first with variant j second:
 * the slowdown of each, from one repeat of the H200 measurement. */
struct sim_pair {
    uint32_t n;
    uint32_t pad;
    float first[SIM_SAMPLES];
    float second[SIM_SAMPLES];
};

struct sim_shm {
    _Atomic uint64_t magic;
    uint32_t version;
    uint32_t pad0;
    uint64_t size;
    pthread_mutex_t lock;
    _Atomic uint32_t gen; /* futex word: bumped whenever the state changes */
    uint32_t pad1;

    double scale;
    double jitter_ns;   /* dispatch order is random within this, scaled */
    double peak_bps;    /* DRAM bandwidth for the unmeasured-pair rule */
    double clock_ns;    /* the model has been advanced up to here */
    double last_reap_ns;
    uint64_t rng;
    uint64_t launched, completed;

    uint32_t nkernels, nvariants, npairs, pad2;
    struct sim_kernel kernels[SIM_KERNELS];
    char variants[SIM_VARIANTS][SIM_VARLEN];
    struct sim_pair pairs[SIM_VARIANTS][SIM_VARIANTS];
    uint32_t ncurves, nppairs;
    struct sim_curve curves[SIM_VARIANTS];
    struct sim_ppair ppairs[SIM_VARIANTS][SIM_VARIANTS];
    struct sim_event events[SIM_EVENTS];
    struct sim_stream streams[SIM_STREAMS];
};

/* Loads the data files into a segment being created (simgpu_data.c). */
int sim__load_data(struct sim_shm *m);

#endif /* MOSAIC_TESTS_SIMGPU_SHM_H */
