/* passes/passes.h - graph passes and the pass manager (public header of passes/).
 *
 * Every pass is `PassResult pass_x(IrGraph *, PassCtx *)`, never prints and
 * never reads globals or the environment.  The pipeline is the visible table
 * in pipeline.c; the manager runs ir_verify after each change (always in
 * debug builds, with verify_each in release) and writes dumps.  It runs
 * each pass on every graph of the region tree (ir.h "regions"), a region
 * op's regions before the graph holding it, so a pass sees one graph at a
 * time and g->parent says whether it is a region.
 */
#ifndef PASSES_PASSES_H
#define PASSES_PASSES_H

#include "ir/ir.h"

typedef enum PassResult { PASS_SAME, PASS_CHANGED, PASS_FAILED } PassResult;

typedef struct PassPlaceOptions PassPlaceOptions;

typedef struct PassCtx {
    Arena scratch;                /* reset after each pass */
    Status *st;
    const PassPlaceOptions *place; /* placement passes only (REQ_PLACEMENT) */
} PassCtx;

/* REQ_PLACEMENT: the pass runs only when PipelineOptions.place is set
 * (placement requested); otherwise it is not part of the pipeline at all
 * (not run, not numbered in dumps). */
enum { REQ_NONE = 0, REQ_TOPO = 1, REQ_SHAPES = 2, REQ_PLACEMENT = 4 };
enum { INV_NONE = 0, INV_PLAN = 1 };

typedef struct PassInfo {
    const char *name;
    PassResult (*fn)(IrGraph *g, PassCtx *cx);
    unsigned requires;
    unsigned invalidates;
} PassInfo;

/* state.c: variables (ir/ops.def "state"): checks that VARIABLE and ASSIGN
 * appear only at top level and that no variable is assigned twice in one
 * run; freezes every variable no ASSIGN writes into its initial value (a
 * CONST: inference from a model with variables); gives a fetched read of an
 * assigned variable its own COPY (the run-start value, as every read sees). */
PassResult pass_state(IrGraph *g, PassCtx *cx);
/* fold.c: replaces nodes whose inputs are all constant by constants, and a
 * COND on a constant selector by its chosen branch (inlined). */
PassResult pass_fold(IrGraph *g, PassCtx *cx);
/* cse.c: merges nodes with equal (op, params, inputs, types). */
PassResult pass_cse(IrGraph *g, PassCtx *cx);
/* dce.c: removes nodes no fetch depends on. */
PassResult pass_dce(IrGraph *g, PassCtx *cx);
/* layout.c: sinks transposes past elementwise ops and keepdims reductions
 * (constants re-laid out at compile time) and cancels transpose pairs, never
 * adding a transpose; a transpose that moves no data becomes a copy. */
PassResult pass_layout(IrGraph *g, PassCtx *cx);
/* fuse.c: folds a contraction's single-use epilogue into it: per-channel
 * add/sub (bias), per-channel mul (constant weights), relu/relu6/leaky
 * activations, and (conv2d) a same-shape add as the residual input. */
PassResult pass_fuse(IrGraph *g, PassCtx *cx);
/* pack.c: replaces the constant HWIO weights of f32 non-depthwise conv2d by
 * tcrt_pack_conv_weights' layout (TCRT_CONV_PACKED, TCRT_CONV_COUT);
 * pass_winograd (before it) does so with tcrt_pack_conv_wino's Winograd
 * F(2x2,3x3) layout (TCRT_CONV_PACK_WINO) for the 3x3 stride-1 convs that
 * run faster that way. */
PassResult pass_winograd(IrGraph *g, PassCtx *cx);
PassResult pass_pack(IrGraph *g, PassCtx *cx);
/* pack.c "dwfuse" (after pack): a packed 1x1 stride-1 conv whose only user
 * is an f32 depthwise conv (multiplier 1) becomes part of it, and so does a
 * packed 1x1 conv that is the only user of a depthwise conv
 * (TCRT_CONV_PACK_DWBLOCK: the expanded tensor is made row by row inside the
 * depthwise kernel, the projection is applied to each depthwise output
 * row), where the tensors not stored are large. */
PassResult pass_dwfuse(IrGraph *g, PassCtx *cx);
/* pack.c "pair" (after dwfuse): a packed 1x1 conv whose residual is the
 * output of another packed 1x1 conv used only there (a bottleneck's last
 * conv and its strided shortcut conv) becomes one conv over both inputs
 * (TCRT_CONV_X2S), so the shortcut's output is never stored. */
PassResult pass_pair(IrGraph *g, PassCtx *cx);
/* memplan.c: one arena; args and results pinned, intermediates reuse dead
 * buffers (greedy best fit in schedule order); CONST data gets offsets in the
 * weights blob; CONV2D workspaces sized by tcrt_fast_conv2d_workspace.
 * An elementwise node whose only consumer is an elementwise node of the same
 * output shape (and that is not fetched) is fused: it gets no buffer, its
 * out[0].offset is PASS_OFFSET_FUSED, and codegen computes it inside the
 * consumer's loop.
 * Regions must be planned before their parent (the pass manager's order):
 * a region's ARGs get no buffer (generated code reads them through args[i]),
 * its results are pinned buffers of its own arena (fetched CONSTs and ARGs
 * get a COPY, except a WHILE body's pass-through ARG i at result i), and
 * the region op's workspace is the largest of its regions' arenas.  Weights
 * of the whole tree are placed when planning the root. */
PassResult pass_memplan(IrGraph *g, PassCtx *cx);
#define PASS_OFFSET_FUSED ((int64_t)-2)

/* grad.c, grad_rules.c, optim.c: gradient construction (training,
 * docs/training.md "Gradient construction").  Not a pipeline pass: the
 * driver calls pass_grad_build after import, before pass_run_pipeline.
 * Reverse mode over the top-level graph: adjoints are propagated from the
 * loss to the differentiated values in reverse node order by one rule per
 * primitive (grad_rules.c) and summed over consumers; the new nodes are
 * appended (the node list stays topological).  Errors name the TF node:
 * "no gradient rule for 'topk' (node 'x')". */
typedef enum GradOptimizerKind { GRAD_SGD, GRAD_MOMENTUM, GRAD_ADAM } GradOptimizerKind;
typedef struct GradOptions {
    GradOptimizerKind kind;
    double lr;                    /* learning rate (all) */
    double momentum;              /* momentum (default 0.9) */
    bool nesterov;                /* momentum: Nesterov's variant */
    double beta1, beta2, epsilon; /* adam (defaults 0.9, 0.999, 1e-8 as TF1's AdamOptimizer) */
    const char *loss_name;        /* for messages ("loss:0"); NULL: the loss node's origin */
    bool data_parallel;           /* --data-parallel: each gradient and the fetched loss go
                                     through ALLREDUCE (the mean over the replicas) */
} GradOptions;
/* Parses "sgd:lr=X", "momentum:lr=X[,momentum=M][,nesterov=0|1]",
 * "adam:lr=X[,beta1=..][,beta2=..][,epsilon=..]" into o (defaults filled);
 * an unknown optimizer or key, a missing lr or a bad number is an error. */
bool pass_grad_parse_optimizer(const char *spec, GradOptions *o, Status *st);
/* grads[i] = d loss / d wrt[i] (same type as wrt[i]); loss must be a float
 * value with one element.  A wrt value no differentiable path connects to
 * the loss gets zeros and has_path[i] = false (has_path may be NULL). */
bool pass_grad_values(IrGraph *g, IrValue loss, const IrValue *wrt, int n_wrt, IrValue *grads, bool *has_path,
                      Status *st);
/* Differentiates loss with respect to every trainable VARIABLE (p.i[0] = 1)
 * it depends on and adds the optimizer's update: one ASSIGN per updated
 * variable (slot variables "<var>/Momentum", "<var>/Adam", "<var>/Adam_1",
 * and "beta1_power"/"beta2_power" as TF1's optimizers); with
 * o->data_parallel every gradient is averaged over the replicas (ALLREDUCE)
 * before its update and the loss's fetches read ALLREDUCE(loss).  Errors: a loss that
 * is not a float scalar, no trainable variable, a variable with no gradient
 * path, a variable the graph already assigns, a primitive without a rule. */
bool pass_grad_build(IrGraph *g, IrValue loss, const GradOptions *o, Status *st);
/* --trainable: turns float CONST nodes into trainable VARIABLEs initialized
 * with their values.  spec "all": every float constant with >= 2 elements
 * that feeds a matmul, a conv2d or a bias add (possibly through a reshape);
 * otherwise a comma-separated list of TF node names (the CONST's origin),
 * each of which must name a float constant. */
bool pass_grad_trainable(IrGraph *g, const char *spec, Status *st);
/* Whether op has a gradient rule (*nodiff: it passes no gradient); true
 * for WHILE, which is unrolled first when its trip count is constant. */
bool pass_grad_has_rule(Op op, bool *nodiff);

/* ---- replicate.c: --replicas JOB, in-graph replication for parameter-server
 * training (docs/distributed.md).  Not a pipeline pass: the driver calls it
 * after import and --trainable, before pass_grad_build.  Every fed tensor of
 * rank >= 1 is split along dimension 0 over the N tasks of JOB; the nodes
 * depending on it are copied per replica with the request
 * /job:JOB/replica:0/task:r; fetch loss_i (the loss) becomes the replicas'
 * mean, other fetched batch values their concatenation along dimension 0;
 * variables without a request go to the tasks of the first other job, least
 * loaded by bytes first.  Errors: JOB not in c, a batch not divisible by N,
 * no split feed, a loss independent of the batch, an ASSIGN or control flow
 * depending on the batch, a fetched batch value that is not batch-major. */
struct PassCluster;
bool pass_replicate(IrGraph *g, const struct PassCluster *c, const char *job, int loss_i, Status *st);

/* ---- place.c, partition.c: devices (docs/devices.md) ----
 * Run only when placement is requested (REQ_PLACEMENT rows, after dce).
 * place: every live top-level node except CONST (weights are on every
 * device) gets n->device = its assigned device, canonical.  Rules, in
 * order: a --device-map pattern matching the node's TF name (the last
 * match wins) or the node's own request (NodeDef.device), completed with
 * the local task /job:localhost/replica:0/task:0; colocation groups (TF
 * `_class` "loc:@x", a VARIABLE with its ASSIGNs) merge their members'
 * requests (a conflict is an error naming both nodes); the request picks
 * the cluster devices it matches (none: an error); kernel availability
 * (pass_place_supports) filters them, and when none is left the group is
 * soft-placed on its task's CPU:0 (reported); several left, or no request:
 * --default-device, else a feed's ARG goes to the host CPU:0, else the cost
 * model: the TensorFlow paper's greedy simulation picks the device where
 * the node would finish first (compute time from FLOPs and bytes per
 * device type, plus transfer time of inputs from other devices).
 * The cluster: the local CPU:0, every --devices entry, the default device,
 * the --device-map devices, and any local CPU:N a node requests. */
typedef struct PassDeviceMap {
    const char *pattern;          /* glob (fnmatch) over TF node names */
    const char *device;           /* device string, partial allowed */
} PassDeviceMap;

typedef enum PassPlaceWhy {
    PLACE_REQUESTED,              /* the node's own device request */
    PLACE_MAPPED,                 /* --device-map */
    PLACE_COLOCATED,              /* a colocation group member's request */
    PLACE_DEFAULT,                /* --default-device */
    PLACE_HOST,                   /* a feed: host memory */
    PLACE_SOFT,                   /* soft placement: no kernel on the requested device */
    PLACE_COST,                   /* the cost model */
} PassPlaceWhy;

typedef struct PassPlaceEntry {
    const IrNode *node;
    int device;                   /* index into PassPlaceReport.devices */
    PassPlaceWhy why;
    const char *detail;           /* "colocated with 'v'", "no GPU kernel for op nms", ... */
} PassPlaceEntry;

typedef struct PassPlaceReport {
    const char **devices;         /* the cluster, canonical names */
    int n_devices;
    PassPlaceEntry *entries;      /* one per placed node, in node order */
    int n_entries;
    int n_soft;                   /* soft placements among them */
    double est_seconds;           /* simulated makespan of the placement (cost model) */
    /* partition: */
    int n_pairs;                  /* SEND/RECV pairs */
    const char **keys;            /* their rendezvous keys, in order */
    int64_t peak_asap, peak_alap; /* peak live bytes, RECVs as early / as late as possible */
} PassPlaceReport;

/* --cluster JOB=N[,JOB=N...] (docs/distributed.md): the tasks of a
 * multi-process run, numbered into MPI ranks in spec order (ps=1,worker=2:
 * ps:0 -> 0, worker:0 -> 1, worker:1 -> 2).  The local task
 * (/job:localhost/replica:0/task:0, where feeds arrive and results leave)
 * is rank 0's process. */
#define PASS_MAX_JOBS 8
#define PASS_MAX_RANKS 64
typedef struct PassCluster {
    int n_jobs;
    char job[PASS_MAX_JOBS][IR_DEV_MAX_NAME];
    int count[PASS_MAX_JOBS];     /* tasks of each job (>= 1) */
    int n_ranks;                  /* their sum */
} PassCluster;
/* Parses spec into c; false with an error naming the flag and the problem. */
bool pass_cluster_parse(const char *spec, PassCluster *c, Status *st);
/* The rank of a device's task (canonical or partial name; the local task is
 * rank 0), or -1 when the task is not in the cluster or the name is
 * malformed. */
int pass_cluster_rank(const PassCluster *c, const char *device);

struct PassPlaceOptions {
    const char *default_device;   /* --default-device, or NULL */
    const char *const *devices;   /* --devices: devices of the cluster */
    int n_devices;
    const PassDeviceMap *map;     /* --device-map, in command-line order */
    int n_map;
    bool for_codegen;             /* partition: devices this build cannot run are errors */
    const PassCluster *cluster;   /* --cluster (docs/distributed.md), or NULL: one process */
    PassPlaceReport *report;      /* filled when set (strings owned by the graph) */
};

PassResult pass_place(IrGraph *g, PassCtx *cx);
/* partition.c: every data edge between nodes on different devices becomes
 * producer -> SEND -> RECV -> consumers, one pair per (tensor, destination
 * device), so each device receives a tensor once; the key is
 * "src;dst;edge_<id>_<tf name>:<index>" (unique).  A fetched value not on
 * the host CPU:0 is received there.  SENDs follow their producer (as soon
 * as possible), RECVs precede their first consumer (as late as possible);
 * the report gets the peak live bytes of both orders.  With for_codegen, a
 * node on a GPU ("no CUDA runtime yet") or on another task is an
 * error.  The partitions stay one IrGraph: each node's device annotates it. */
PassResult pass_partition(IrGraph *g, PassCtx *cx);
/* Whether a device of type `type` ("CPU", "GPU") has a kernel for op. */
bool pass_place_supports(Op op, const char *type);
/* The cost model's estimates in seconds: one node on a device type, and
 * moving `bytes` between two devices (canonical names). */
double pass_place_node_seconds(const IrNode *n, const char *type);
double pass_place_transfer_seconds(int64_t bytes, const char *src, const char *dst);
/* Clears every node's device in g's tree (compiling without placement
 * ignores the model's requests, as before placement existed). */
void pass_clear_devices(IrGraph *g);

const PassInfo *pass_pipeline(int *n);
const PassInfo *pass_find(const char *name);
/* The end of a rewriting pass that turned g->fold_on_build off: restores
 * it to fold, compacts g when changed; PASS_FAILED when cx->st holds an
 * error, else PASS_CHANGED or PASS_SAME. */
PassResult pass_finish_rewrite(IrGraph *g, PassCtx *cx, bool fold, bool changed);

typedef struct PipelineOptions {
    const char *dump_after;       /* pass name, "all" or NULL */
    const char *dump_dir;         /* writes NN-<pass>.ir and .dot there */
    bool verify_each;
    const char *const *disabled;  /* pass names to skip */
    int n_disabled;
    const PassPlaceOptions *place; /* NULL: no placement (REQ_PLACEMENT passes left out) */
} PipelineOptions;

bool pass_run_pipeline(IrGraph *g, const PipelineOptions *o, Status *st);

#endif
