# shellcheck shell=bash
# Shared set-up of the scripts in scripts/gpu (sourced, not run).
#
# `source lib.sh --staged`: only the functions below, for the scripts that
# stage their results outside $OUT and pack them into one tarball when they
# exit (the device tool brings back at most 8 files from $OUT, and a run
# that failed half-way must still bring back what it wrote):
#
#   stage_results NAME TAG TEMPLATE [DIR]
#       RES=$stage/NAME, made; stage is DIR when given (a script's
#       *_STAGE override) or a fresh `mktemp -d $TMPDIR/TEMPLATE.XXXXXX`;
#       T0, and log(), which prints "[TAG +  Ns] text" to stderr and
#       appends it to $RES/script.log.
#   prepare_carry DIR "TARGETS" LIBS FILE...
#       the --prepare step of a script whose build is carried to the GPU
#       machine (its image has no cJSON or libcsv): a Release build of
#       TARGETS in DIR, tests off, and the libraries matching the awk
#       pattern LIBS that each FILE (a path in DIR) links, copied into
#       DIR/lib.
#   trap pack_results EXIT
#       packs $stage/NAME into $OUT/NAME.tar.gz and exits with the
#       script's status, as told by these variables, set before it runs:
#         PACK_EXCLUDE   array of tar --exclude patterns (NAME/...)
#         PACK_TAR       0: no tarball (a dry run), default 1
#         PACK_SAY       the line said once packed: "long" (default,
#                        "== NAME: results packed into F"), "size" (the
#                        same with its KiB), "short" ("== packed F")
#         PACK_COPY      files of RES copied beside the tarball when they
#                        exist (default "summary.txt"; copied only with it)
#         PACK_CAT       1: print $RES/summary.txt last
#         PACK_RM        1: remove the stage
#
# `source lib.sh` (no argument): the dataset scripts' set-up. Needs OUT and
# PHASES set; defines REPO, BUILD, DS ($OUT/ds), ZOO, PROF, log and has;
# builds $BUILD (default build-gpu, carried from the development machine)
# when its mosaic-zoo is missing; records the GPU state in $DS/env.txt.

stage_results() {
    PACK_NAME=$1
    PACK_TAG=$2
    stage=${4:-$(mktemp -d "${TMPDIR:-/tmp}/$3.XXXXXX")}
    RES=$stage/$1
    mkdir -p "$RES"
    T0=$SECONDS
}

prepare_carry() {
    local dir=$1 targets=$2 libs=$3 f lib
    shift 3
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMOSAIC_BUILD_TESTS=OFF >/dev/null
    # shellcheck disable=SC2086 # a list of targets
    cmake --build "$dir" -j"${JOBS:-2}" --target $targets
    for f in "$@"; do
        for lib in $(ldd "$dir/$f" | awk "/$libs/ { print \$3 }"); do
            cp -L "$lib" "$dir/lib/"
        done
    done
}

pack_results() {
    local rc=$? tarball="$OUT/$PACK_NAME.tar.gz" f pat excl=()
    set +e
    for pat in ${PACK_EXCLUDE[@]+"${PACK_EXCLUDE[@]}"}; do
        excl+=(--exclude="$pat")
    done
    if [[ ${PACK_TAR:-1} == 1 ]]; then
        if tar -czf "$tarball" -C "$stage" "${excl[@]}" "$PACK_NAME"; then
            case ${PACK_SAY:-long} in
            short) echo "== packed $tarball" >&2 ;;
            size) echo "== $PACK_NAME: results packed into $tarball ($(du -k "$tarball" | cut -f1) KiB)" >&2 ;;
            *) echo "== $PACK_NAME: results packed into $tarball" >&2 ;;
            esac
        fi
        for f in ${PACK_COPY-summary.txt}; do
            [[ -f $RES/$f ]] && cp "$RES/$f" "$OUT/$f"
        done
    fi
    [[ ${PACK_CAT:-0} == 1 && -f $RES/summary.txt ]] && cat "$RES/summary.txt"
    [[ ${PACK_RM:-0} == 1 ]] && rm -rf "$stage"
    exit "$rc"
}

if [[ ${1:-} == --staged ]]; then
    # stage_results sets PACK_TAG, T0 and RES.
    log() { printf '[%s +%3ds] %s\n' "$PACK_TAG" $((SECONDS - T0)) "$*" | tee -a "$RES/script.log" >&2; }
    return 0
fi

: "${OUT:?set OUT to a results directory}"
REPO=$(pwd)
BUILD=${BUILD:-build-gpu}
DS=$OUT/ds
mkdir -p "$DS"
: >>"$OUT/script.log"
T0=$SECONDS
CUPTI_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
# build-gpu/lib carries libcjson/libcsv for mosaic-profile (none on the image).
export LD_LIBRARY_PATH=$REPO/$BUILD/lib:$CUPTI_DIR:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MOSAIC_GIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
log() { printf '[+%4ds] %s\n' $((SECONDS - T0)) "$*" | tee -a "$OUT/script.log" >&2; }
has() { [[ " $PHASES " == *" $1 "* ]]; }

if [[ ! -x $BUILD/bin/mosaic-zoo ]]; then
    log "building into $BUILD"
    cmake -S . -B "$BUILD" -DMOSAIC_BUILD_TESTS=OFF -DMOSAIC_BUILD_CUDA=ON >"$OUT/build.log" 2>&1 &&
        cmake --build "$BUILD" -j 16 >>"$OUT/build.log" 2>&1 || { log "build failed"; tail -30 "$OUT/build.log"; }
fi
ZOO=$REPO/$BUILD/bin/mosaic-zoo
PROF=$REPO/$BUILD/bin/mosaic-profile
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,compute_mode --format=csv;
  nvcc --version | tail -2; } >"$DS/env.txt" 2>&1
