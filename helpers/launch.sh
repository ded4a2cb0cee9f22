#!/usr/bin/env bash
# The series' bundled launcher (introduced in notebook 01). Run `bash helpers/launch.sh --help`.
set -uo pipefail
# The whole script is one { ... } block: bash reads it completely before running any of it, so
# editing or updating this file never disturbs a job that is already running.
{

usage() {
    cat <<'EOF'
Usage: bash helpers/launch.sh [options] [--] SCRIPT [ARGS...]

Start a distributed MindSpore job: one process per rank, each running SCRIPT with ARGS.

SCRIPT      a Python file (the notebooks write theirs into notebooks/scripts/), or `python -m MODULE`.

Options:
  --workers N         ranks in the whole job (default: 8 on an Ascend node, 2 on CPU; env TUTORIAL_WORKERS;
                      rank-table startup: the table's rank count)
  --local-workers M   ranks started on this node (default: all of them; multi-node: --workers / nodes)
  --node-rank R       this node's index in a multi-node job (node R holds ranks R*M .. R*M+M-1); node 0
                      also runs the scheduler
  --master-addr A     the scheduler's address, on node 0 (default 127.0.0.1: this machine only)
  --device D          CPU or Ascend (default: detected; env TUTORIAL_DEVICE)
  --startup S         dynamic (the default): MindSpore's dynamic cluster (动态组网), a scheduler
                      plus N workers, started by this launcher directly with the environment msrun gives
                      them (MS_ROLE, MS_SCHED_HOST, MS_SCHED_PORT, MS_WORKER_NUM, RANK_ID, ...).
                      msrun: the same cluster, started through msrun.
                      On CPU the dynamic startup pins rank k to one core (k modulo the cores, taskset);
                      msrun --bind_core splits the cores evenly, and binds none with fewer cores than ranks.
                      ranktable: Ascend only; one process per card with RANK_TABLE_FILE, RANK_ID,
                      DEVICE_ID and RANK_SIZE set, each in its own folder RUN/rank_<k>/.
  --rank-table FILE   the rank table for --startup ranktable (validated before anything starts)
  --server-id ID      which server of a multi-server rank table this node is (its server_id or server_ip)
  --log-dir DIR       run folder for logs and metrics (default: runs/job-<time>-<pid>).
                      A folder that already holds a run is never overwritten: DIR-2, DIR-3... is used,
                      and of two launches started together, each claims a folder of its own.
  --port P            scheduler port on 127.0.0.1 (default: a free one); a busy port is an error
  --timeout S         seconds the cluster may take to form, msrun's --cluster_time_out (default 60)
  --hang-timeout S    stop the job when no rank wrote anything (log, metrics) for S seconds
                      (default 300; 0 = never). Graph compilation on Ascend can be silent for minutes.
  --caller PID        the process this job belongs to (default: the one that started launch.sh, the
                      Jupyter kernel under launch()); `none`: the job may outlive it (a job left running
                      under nohup on another node)
  --dry-run           print each rank's environment and command, start nothing, exit 0
  --stop RUN_DIR      stop every process of the job in RUN_DIR (or --stop PID...: the processes a
                      leftover warning named), then exit
  -h, --help          this text

Exit code: the job's (0 when every rank finished). When a rank fails, the launcher stops the
others, names the failed rank and prints the tail of its log.

Nothing of a job outlives its caller or its launcher: when the process that started launch.sh goes
away (a restarted kernel, a closed terminal), or launch.sh itself dies by any signal, a watchdog in a
session of its own (python -m helpers.jobs guard) stops every process of the job - scheduler,
workers, msrun and its children, rank-table ranks - within a few seconds, whether or not the job
prints; the ranks also get SIGKILL from the kernel the moment launch.sh dies (setpriv --pdeathsig,
util-linux 2.33 or later; msrun gets SIGINT and stops its workers). Ctrl-C, SIGTERM and SIGHUP stop
the job at once. RUN/ended.txt says how the job ended. Processes of an earlier job of this checkout
that are still running are named before a new job starts, with the command that stops them.

Examples:
  bash helpers/launch.sh notebooks/scripts/train.py                # all ranks of this node
  bash helpers/launch.sh --workers 2 notebooks/scripts/train.py --epochs 1
  bash helpers/launch.sh --dry-run --startup ranktable --rank-table rank_table_file.json my_job.py
EOF
}

die() { echo "launch.sh: error: $*" >&2; exit 2; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT="$(dirname "$HERE")"

# The Python whose MindSpore runs the job: the caller's (TUTORIAL_PYTHON), an active venv, the
# project's .venv, then python3 on PATH. Its folder goes first on PATH: msrun starts workers as `python`.
PYTHON="${TUTORIAL_PYTHON:-}"
[[ -z "$PYTHON" && -n "${VIRTUAL_ENV:-}" ]] && PYTHON="$VIRTUAL_ENV/bin/python"
[[ -z "$PYTHON" && -x "$PROJECT/.venv/bin/python" ]] && PYTHON="$PROJECT/.venv/bin/python"
[[ -z "$PYTHON" ]] && PYTHON="$(command -v python3 || command -v python || true)"
[[ -x "$PYTHON" ]] || die "no Python found: run 'make setup' or set TUTORIAL_PYTHON"
export PATH="$(dirname "$PYTHON"):$PATH"
export PYTHONPATH="$PROJECT${PYTHONPATH:+:$PYTHONPATH}"

WORKERS_ARG="" LOCAL_WORKERS="" NODE_RANK="" MASTER_ADDR="127.0.0.1" DEVICE="" STARTUP=dynamic RANK_TABLE=""
SERVER_ID="" LOG_DIR="" PORT="" TIMEOUT=60 HANG_TIMEOUT=300 DRY_RUN=0 CALLER="$PPID"
need_value() { [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die "$1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --workers) need_value "$@"; WORKERS_ARG="$2"; shift 2 ;;
        --local-workers) need_value "$@"; LOCAL_WORKERS="$2"; shift 2 ;;
        --node-rank) need_value "$@"; NODE_RANK="$2"; shift 2 ;;
        --master-addr) need_value "$@"; MASTER_ADDR="$2"; shift 2 ;;
        --device) need_value "$@"; DEVICE="$2"; shift 2 ;;
        --startup) need_value "$@"; STARTUP="$2"; shift 2 ;;
        --rank-table) need_value "$@"; RANK_TABLE="$2"; shift 2 ;;
        --server-id) need_value "$@"; SERVER_ID="$2"; shift 2 ;;
        --log-dir) need_value "$@"; LOG_DIR="$2"; shift 2 ;;
        --port) need_value "$@"; PORT="$2"; shift 2 ;;
        --timeout) need_value "$@"; TIMEOUT="$2"; shift 2 ;;
        --hang-timeout) need_value "$@"; HANG_TIMEOUT="$2"; shift 2 ;;
        --caller) need_value "$@"; CALLER="$2"; shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        --stop) [[ $# -ge 2 ]] || die "--stop needs a run folder (or PIDs)"; shift
                exec "$PYTHON" -m helpers.jobs stop "$@" ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) break ;;
    esac
done

# What each rank runs: SCRIPT ARGS.
if [[ $# -eq 0 || "$1" == -* ]]; then
    die "give the script every rank runs (a Python file, or 'python -m MODULE'), after the options"
elif [[ "$1" == python || "$1" == python3 ]]; then
    SCRIPT_CMD=(python "${@:2}")
else
    [[ -f "$1" ]] || die "SCRIPT '$1' not found: give the path of a Python file, or 'python -m MODULE'"
    SCRIPT_CMD=(python "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" "${@:2}")
fi

# Device and worker count: helpers.device holds the policy (one place for Python and shell).
DEVICE_ARGS=(--shell); [[ -n "$DEVICE" ]] && DEVICE_ARGS+=(--device "$DEVICE")
DEFAULTS="$("$PYTHON" -m helpers.device "${DEVICE_ARGS[@]}")" || exit 2   # it printed why
eval "$DEFAULTS"   # sets DEVICE and WORKERS (the default count)
WORKERS="${WORKERS_ARG:-${WORKERS}}"
[[ "$WORKERS" =~ ^[0-9]+$ && "$WORKERS" -ge 1 ]] || die "--workers must be a positive integer, got '$WORKERS'"
LOCAL_WORKERS="${LOCAL_WORKERS:-$WORKERS}"
[[ "$LOCAL_WORKERS" =~ ^[0-9]+$ && "$LOCAL_WORKERS" -ge 1 && "$LOCAL_WORKERS" -le "$WORKERS" ]] \
    || die "--local-workers must be between 1 and --workers ($WORKERS), got '$LOCAL_WORKERS'"
if (( LOCAL_WORKERS < WORKERS )); then
    (( WORKERS % LOCAL_WORKERS == 0 )) \
        || die "--workers $WORKERS is not a multiple of --local-workers $LOCAL_WORKERS: every node runs the same count"
    [[ "$NODE_RANK" =~ ^[0-9]+$ && "$NODE_RANK" -lt $((WORKERS / LOCAL_WORKERS)) ]] \
        || die "a multi-node job needs --node-rank 0..$((WORKERS / LOCAL_WORKERS - 1)) on each node, got '$NODE_RANK'"
    [[ -n "$PORT" ]] || die "a multi-node job needs the same --port on every node (the scheduler's, on node 0)"
    [[ "$STARTUP" != ranktable ]] \
        || die "--local-workers/--node-rank are for msrun and the dynamic cluster; a rank table lists every node"
fi
FIRST=$(( ${NODE_RANK:-0} * LOCAL_WORKERS ))   # this node's first rank
WHAT="$WORKERS ranks"
(( LOCAL_WORKERS < WORKERS )) && WHAT="node ${NODE_RANK}: ranks $FIRST-$((FIRST + LOCAL_WORKERS - 1)) of $WORKERS"
[[ "$TIMEOUT" =~ ^[0-9]+$ && "$TIMEOUT" -ge 1 ]] || die "--timeout must be a positive number of seconds, got '$TIMEOUT'"
[[ "$CALLER" == none || "$CALLER" =~ ^[0-9]+$ ]] || die "--caller must be a process id or 'none', got '$CALLER'"
[[ "$CALLER" == none ]] && CALLER=0
[[ "$HANG_TIMEOUT" =~ ^[0-9]+$ ]] || die "--hang-timeout must be a number of seconds (0 = off), got '$HANG_TIMEOUT'"
case "$STARTUP" in dynamic|msrun|ranktable) ;; *) die "unknown --startup '$STARTUP': use dynamic, msrun or ranktable" ;; esac
if [[ "$DEVICE" == Ascend && "$STARTUP" != ranktable ]]; then
    CARDS=$(ls /dev/davinci[0-9]* 2>/dev/null | wc -l)
    [[ "$CARDS" -eq 0 || "$LOCAL_WORKERS" -le "$CARDS" ]] \
        || die "$LOCAL_WORKERS ranks on this node but it has $CARDS Ascend cards: lower --workers (or --local-workers)"
fi

# The run folder: a new one per launch; never reuse a folder that already holds a run.
[[ -n "$LOG_DIR" ]] || LOG_DIR="$PROJECT/runs/job-$(date +%Y%m%d-%H%M%S)-$$"
[[ "$LOG_DIR" == /* ]] || LOG_DIR="$PWD/$LOG_DIR"
existing() {  # existing PATH: PATH, or its nearest parent that exists
    local d="$1"
    while [[ ! -e "$d" && "$d" != / ]]; do d="$(dirname "$d")"; done
    echo "$d"
}
free_bytes() { df -P -B1 "$(existing "$1")" 2>/dev/null | awk 'NR == 2 { print $4 }'; }   # bytes free there
disk_is_full() {  # true, after saying so in one line, when under 1 MiB is free where the run folder lives
    local where free; where="$(existing "$LOG_DIR")"; free="$(free_bytes "$where")"
    [[ -n "$free" ]] && (( free < 1048576 )) || return 1
    echo "launch.sh: the run folder's filesystem is full: $free bytes free under $LOG_DIR" \
         "(filesystem mounted on $(df -P "$where" 2>/dev/null | awk 'NR == 2 { print $6 }'))" >&2
}
claim_run_dir() {  # claim_run_dir DIR: make DIR this launch's own; fails if DIR already holds a run or is claimed
    mkdir -p "$1" 2>/dev/null || return 1
    [[ -z "$(ls -A "$1" 2>/dev/null)" ]] || return 1
    ( set -o noclobber; echo "$$" > "$1/.launch.claim" ) 2>/dev/null   # O_EXCL: of two launches, one wins
}
WANTED="$LOG_DIR" n=2
if (( DRY_RUN )); then   # the folder a real launch would use; nothing is created
    while [[ -n "$(ls -A "$LOG_DIR" 2>/dev/null)" ]]; do LOG_DIR="$WANTED-$n"; n=$((n + 1)); done
else
    [[ "$(free_bytes "$LOG_DIR")" != 0 ]] \
        || die "the run folder's filesystem is full: 0 bytes free under $LOG_DIR; free some space or give --log-dir elsewhere"
    until claim_run_dir "$LOG_DIR"; do
        [[ -d "$LOG_DIR" ]] || { disk_is_full; die "cannot create the run folder $LOG_DIR"; }
        LOG_DIR="$WANTED-$n"; n=$((n + 1))
    done
fi
[[ "$LOG_DIR" == "$WANTED" ]] || echo "launch.sh: $WANTED already holds a run; writing to $LOG_DIR instead" >&2

# Heartbeat every 1 s instead of MindSpore's 3-5 s: a worker learns that the cluster has formed only
# from a heartbeat reply, and its exit joins the heartbeat thread, so both waits shrink by up to 4 s
# each (benchmarks/RESULTS.md). A caller's own values win.
export MS_RETRY_INTERVAL_LOWER="${MS_RETRY_INTERVAL_LOWER:-1}" MS_RETRY_INTERVAL_UPPER="${MS_RETRY_INTERVAL_UPPER:-1}"

# Every process of this job carries TUTORIAL_JOB_ID, so the launcher can always find and stop all of them.
export TUTORIAL_JOB_ID="job-$$-$RANDOM$RANDOM"
ended() { ( set -o noclobber; echo "$*" > "$LOG_DIR/ended.txt" ) 2>/dev/null; return 0; }   # the first word stays
if (( ! DRY_RUN )); then
    # Earlier jobs of this checkout still running are named now, not found later as a busy port or card.
    "$PYTHON" -m helpers.jobs leftovers "$PROJECT" 2>&1 | tee -a "$LOG_DIR/launcher.log" >&2
    # The watchdog: in a session of its own (a signal to this launcher's group does not reach it) and
    # without the job's marks (it is not one of the job's processes), it outlives this launcher.
    env -u TUTORIAL_JOB_ID setsid "$PYTHON" -m helpers.jobs guard --job-id "$TUTORIAL_JOB_ID" \
        --launcher $$ --caller "$CALLER" --run-dir "$LOG_DIR" < /dev/null > /dev/null 2>> "$LOG_DIR/launcher.log" &
    trap 'ended "exited: launch.sh ended with code $?"' EXIT   # unless something more precise was said first
fi
export TUTORIAL_RUN_DIR="$LOG_DIR" TUTORIAL_DEVICE="$DEVICE" PYTHONUNBUFFERED=1
export TUTORIAL_PROJECT="$PROJECT" TUTORIAL_LAUNCHER_PID=$$
# Each rank dies with this launcher, by the kernel's parent-death signal, where setpriv offers it.
DEATHSIG=(); setpriv --help 2>/dev/null | grep -q -- --pdeathsig && DEATHSIG=(setpriv --pdeathsig KILL)
# What only CPU needs is set here, never in the scripts (nothing in them is wrong on Ascend):
PIN=()   # start_rank's prefix: one core per rank
if [[ "$DEVICE" == CPU ]]; then
    # MindSpore's bundled oneDNN picks a ~30x slower NCHW fp32 conv kernel on AVX-512 CPUs (0.7-1.1 s
    # per conv instead of 8-16 ms, measured with MindSpore 2.10's oneDNN 3.10): cap it at AVX2.
    export ONEDNN_MAX_CPU_ISA="${ONEDNN_MAX_CPU_ISA:-AVX2}"
    # Ranks sharing every core fight over them (benchmarks/RESULTS.md, scaling): one core each (msrun
    # --bind_core instead splits the cores evenly, and binds none with fewer cores than ranks). Pinned from
    # the start, MindSpore needs no threads_num(1): a small training step ran as fast as with it (0.78 vs
    # 0.77 ms, MindSpore 2.10).
    read -r -a CORES <<< "$("$PYTHON" -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
    command -v taskset > /dev/null && PIN=(taskset -c)
    # Every process of the job (this launcher's children inherit it) runs SCHED_BATCH: a thread that
    # wakes up no longer preempts the one running on its core. Ranks share cores here, and MindSpore
    # 2.10 can crash at exit when they do: leaving the cluster, the main thread, woken by the
    # scheduler's reply, overtakes its own receive thread and deletes the connection that thread is
    # still reading (SIGSEGV in TCPComm::ReadCallBack; README, troubleshooting). Jobs also run about
    # twice as fast so (benchmarks/RESULTS.md, section 6).
    command -v chrt > /dev/null && chrt --batch --pid 0 $$
fi
pin_prefix() {  # pin_prefix K: the command prefix that pins rank K (nothing on Ascend)
    (( ${#PIN[@]} )) && echo "${PIN[*]} ${CORES[$(( $1 % ${#CORES[@]} ))]}"
    return 0
}

job_pids() {  # every live process whose environment carries this job's id (one grep, not one per process)
    local f pid
    while IFS= read -r f; do
        pid="${f#/proc/}"; pid="${pid%/environ}"
        [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] || echo "$pid"
    done < <(env -u TUTORIAL_JOB_ID grep -lzx "TUTORIAL_JOB_ID=$TUTORIAL_JOB_ID" /proc/[0-9]*/environ 2>/dev/null)
}
stop_job() {  # TERM, a short grace, then KILL whatever of the job is left
    local pids
    pids="$(job_pids)"; [[ -z "$pids" ]] && return 0
    kill -TERM $pids 2>/dev/null
    local tick
    for tick in 1 2 3 4 5 6 7 8 9 10; do   # up to 1 s of grace, over as soon as all are gone
        sleep 0.1; pids="$(job_pids)"; [[ -z "$pids" ]] && return 0
    done
    kill -KILL $pids 2>/dev/null
    return 0
}
PID_MAP="$LOG_DIR/ranks.pid"   # "pid rank" per worker, so a killed worker can be named
note_worker_pids() {  # msrun starts the workers: find them by the job id, read their RANK_ID
    # Done once every rank is named. Count ranks, not lines: msrun's `tail -f worker_0.log` (--tail_worker_log)
    # runs with rank 0's environment, so it is noted as rank 0 too, and could fill the count before rank 1 starts.
    [[ -f "$PID_MAP" && $(cut -d' ' -f2 "$PID_MAP" | sort -u | wc -l) -ge $LOCAL_WORKERS ]] && return 0
    local pid env rank
    for pid in $(job_pids); do
        grep -q "^$pid " "$PID_MAP" 2>/dev/null && continue
        env="$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null)" || continue
        grep -qx "MS_ROLE=MS_WORKER" <<< "$env" || continue
        rank="$(grep -m1 '^RANK_ID=' <<< "$env")"
        [[ -n "$rank" ]] && echo "$pid ${rank#RANK_ID=}" >> "$PID_MAP"
    done
    return 0
}
job_is_hung() {  # true when no rank wrote anything for HANG_TIMEOUT seconds
    (( HANG_TIMEOUT > 0 )) || return 1
    # The clock starts once every rank has written its first line: until then the workers are
    # still starting (importing MindSpore can take a while on a loaded machine), and a worker
    # that never joins is caught by the cluster timeout (--timeout) instead.
    (( $(find "$LOG_DIR" -name 'worker_*.log' -size +0 2>/dev/null | wc -l) >= LOCAL_WORKERS )) || return 1
    local newest
    # Only what the ranks write counts: the scheduler logs a heartbeat every 5 s even when all are stuck.
    newest="$(find "$LOG_DIR" -type f \( -name 'worker_*.log' -o -path '*/rank_*/*' \) -printf '%T@\n' 2>/dev/null \
              | sort -n | tail -n 1)"
    [[ -n "$newest" ]] || return 1
    (( $(date +%s) - ${newest%.*} >= HANG_TIMEOUT )) || return 1
    say "no rank wrote anything for $HANG_TIMEOUT s: the job looks hung; stopping it"
}
say() { echo "launch.sh: $*" | tee -a "$LOG_DIR/launcher.log" >&2; }   # to the console and launcher.log
finish_job() {  # finish_job RC: stop what is left of the job; on failure, name the failed rank(s)
    trap - INT TERM HUP
    stop_job
    case "$1" in
        0) ended "finished: every rank exited with code 0" ;;
        124) ended "stopped: no rank wrote anything for $HANG_TIMEOUT s (--hang-timeout)" ;;
        *) ended "failed: the job exited with code $1 (launcher.log names the rank)" ;;
    esac
    if [[ $1 -ne 0 ]]; then
        echo "launch.sh: the job failed (exit code $1). Logs: $LOG_DIR" >&2
        disk_is_full   # a full disk first: the ranks' own tracebacks may not have reached their logs
        "$PYTHON" -m helpers.joblog "$LOG_DIR" >&2
    fi
    return "$1"
}
on_interrupt() {  # on_interrupt SIGNAL: Ctrl-C (INT), kill (TERM), a closed terminal (HUP)
    trap - INT TERM HUP
    ended "interrupted: launch.sh received SIG$1 and stopped the job"
    echo "launch.sh: interrupted; stopping every process of the job" >&2
    stop_job; exit 130
}
stop_on_signals() { trap 'on_interrupt INT' INT; trap 'on_interrupt TERM' TERM; trap 'on_interrupt HUP' HUP; }

RANK_PIDS=() RANK_IDS=()   # the ranks this launcher started itself (dynamic and rank-table startup)
start_rank() {  # start_rank K DIR LOG CMD...: rank K in the background, in folder DIR, its output in LOG
    local k=$1 dir=$2 log=$3; shift 3
    if (( k == 0 )); then   # rank 0's lines also go to the console, as msrun --tail_worker_log=0 does
        (cd "$dir" && exec "$@") > >(env -u TUTORIAL_JOB_ID tee "$log") 2>&1 &
    else
        (cd "$dir" && exec "$@") > "$log" 2>&1 &
    fi
    RANK_PIDS+=($!); RANK_IDS+=("$k"); echo "$! $k" >> "$PID_MAP"
}
watch_ranks() {  # until every rank exited 0; a rank that fails (or the scheduler, pid $1) ends the job
    local sched_pid="${1:-}" rc=0 running=${#RANK_PIDS[@]} i code ticks=0
    while [[ $running -gt 0 && $rc -eq 0 ]]; do
        sleep 0.2; running=0; ticks=$((ticks + 1))
        for i in "${!RANK_PIDS[@]}"; do
            if kill -0 "${RANK_PIDS[$i]}" 2>/dev/null; then running=$((running + 1)); continue; fi
            wait "${RANK_PIDS[$i]}"; code=$?
            unset 'RANK_PIDS[i]'
            if [[ $code -ne 0 ]]; then
                rc=$code
                say "rank ${RANK_IDS[$i]} exited with code $code; stopping the others"
            fi
        done
        if [[ $rc -eq 0 && -n "$sched_pid" && $running -gt 0 ]] && ! kill -0 "$sched_pid" 2>/dev/null; then
            wait "$sched_pid"; code=$?; sched_pid=""
            if [[ $code -ne 0 ]]; then
                rc=$code
                say "the scheduler exited with code $code (see scheduler.log); stopping the ranks"
            fi
        fi
        if [[ $rc -eq 0 ]] && (( ticks % 5 == 0 )) && job_is_hung; then rc=124; fi
    done
    return "$rc"
}

pick_port() {  # the scheduler's port: the caller's (checked free), or one the kernel says is free
    if [[ -z "$PORT" ]]; then
        PORT="$("$PYTHON" -m helpers.ports free)"
    elif (( ${NODE_RANK:-0} == 0 )); then   # on node R > 0, node 0's scheduler owns the port
        "$PYTHON" -m helpers.ports check "$PORT" >&2 || exit 2
    fi
}

run_dynamic() {
    # MindSpore's dynamic cluster, started the way msrun starts it (process_entity/_api.py), minus
    # msrun itself: one scheduler (MS_ROLE=MS_SCHED) and one process per rank (MS_ROLE=MS_WORKER).
    # Every rank is this launcher's child, so its exit code is known the moment it exits, and the
    # idle scheduler is stopped as soon as every rank is done (msrun waits for its 5 s shutdown poll).
    # Node R > 0 of a multi-node job starts only its workers; they join node 0's scheduler.
    pick_port
    # The variables msrun gives each process; the dry run prints exactly what would be started.
    local cluster=(MS_SCHED_HOST="$MASTER_ADDR" MS_SCHED_PORT="$PORT" MS_WORKER_NUM="$WORKERS" MS_TOPO_TIMEOUT="$TIMEOUT")
    local sched_env=(MS_ROLE=MS_SCHED "${cluster[@]}" RANK_ID=0 RANK_SIZE="$WORKERS")
    local sched_cmd=(python -c "import mindspore as ms; from mindspore.communication import init; ms.set_device('$DEVICE'); init()")
    # Each process leads its own session, as under msrun (os.setsid): a Ctrl-C reaches the launcher only.
    local session=(); command -v setsid > /dev/null && session=(setsid -w)
    local sched_pid=""
    if [[ $DRY_RUN -eq 1 ]]; then
        echo "# dynamic-cluster startup, $WHAT on $DEVICE, logs in $LOG_DIR"
        (( FIRST == 0 )) && echo "scheduler: ${sched_env[*]} -> ${sched_cmd[*]} > $LOG_DIR/scheduler.log"
    else
        echo "launch.sh: $WHAT on $DEVICE via MindSpore's dynamic cluster ($MASTER_ADDR:$PORT), logs in $LOG_DIR" \
            | tee -a "$LOG_DIR/launcher.log"
        stop_on_signals
        if (( FIRST == 0 )); then   # node 0 (or the only node) runs the scheduler
            env "${sched_env[@]}" "${session[@]}" "${DEATHSIG[@]}" "${sched_cmd[@]}" > "$LOG_DIR/scheduler.log" 2>&1 &
            sched_pid=$!
        fi
    fi
    local k
    for ((k = FIRST; k < FIRST + LOCAL_WORKERS; k++)); do
        local envs=(MS_ROLE=MS_WORKER "${cluster[@]}" MS_NODE_ID="$k" RANK_ID="$k" DEVICE_ID="$((k - FIRST))"
                    RANK_SIZE="$WORKERS")
        local pin; read -r -a pin <<< "$(pin_prefix "$k")"   # global rank: "nodes" sharing a host spread out
        if [[ $DRY_RUN -eq 1 ]]; then
            echo "rank $k: ${envs[*]} TUTORIAL_RUN_DIR=$LOG_DIR -> ${pin[*]}${pin:+ }${SCRIPT_CMD[*]} > $LOG_DIR/worker_$k.log"
            continue
        fi
        start_rank "$k" "$PWD" "$LOG_DIR/worker_$k.log" env "${envs[@]}" "${session[@]}" "${DEATHSIG[@]}" "${pin[@]}" \
            "${SCRIPT_CMD[@]}"
    done
    [[ $DRY_RUN -eq 1 ]] && return 0
    local rc=0
    watch_ranks "$sched_pid" || rc=$?
    finish_job "$rc"   # the ranks are done (or one failed): stop the rest and the idle scheduler
}

run_msrun() {
    pick_port
    local cmd=("$PYTHON" -m mindspore.parallel.cluster.run --worker_num="$WORKERS" --local_worker_num="$LOCAL_WORKERS"
               --master_addr="$MASTER_ADDR" --master_port="$PORT" --log_dir="$LOG_DIR" --join=True
               --cluster_time_out="$TIMEOUT" --tail_worker_log=0)
    [[ -n "$NODE_RANK" ]] && cmd+=(--node_rank="$NODE_RANK")
    # msrun --bind_core: cores split evenly over the workers (taskset -c); none bound with fewer cores than workers
    (( ${#PIN[@]} )) && cmd+=(--bind_core=True)
    cmd+=("${SCRIPT_CMD[@]}")
    if [[ $DRY_RUN -eq 1 ]]; then
        echo "# msrun startup, node ${NODE_RANK:-0}: $LOCAL_WORKERS of $WORKERS workers on $DEVICE, logs in $LOG_DIR"
        local k
        for ((k = FIRST; k < FIRST + LOCAL_WORKERS; k++)); do
            echo "rank $k: MS_ROLE=MS_WORKER MS_SCHED_HOST=$MASTER_ADDR MS_SCHED_PORT=$PORT MS_WORKER_NUM=$WORKERS" \
                 "RANK_ID=$k DEVICE_ID=$((k - FIRST)) TUTORIAL_RUN_DIR=$LOG_DIR -> ${SCRIPT_CMD[*]} > $LOG_DIR/worker_$k.log"
        done
        echo "command: ${cmd[*]}"
        return 0
    fi
    echo "launch.sh: $WHAT on $DEVICE via msrun (scheduler $MASTER_ADDR:$PORT), logs in $LOG_DIR"
    stop_on_signals
    # tee runs without the job id: stopping the job must not cut msrun's last lines from launcher.log.
    # msrun gets SIGINT when this launcher dies: its own Ctrl-C handler then kills its workers.
    local deathsig=(); (( ${#DEATHSIG[@]} )) && deathsig=(setpriv --pdeathsig INT)
    "${deathsig[@]}" "${cmd[@]}" > >(env -u TUTORIAL_JOB_ID tee -a "$LOG_DIR/launcher.log") 2>&1 &
    local msrun_pid=$! failed_at="" hung=0
    # msrun kills the other workers when one fails, then waits for the scheduler, which can wait
    # out the whole cluster timeout. Once a failure is seen, give it 5 s, then stop the rest.
    while kill -0 "$msrun_pid" 2>/dev/null; do
        sleep 1
        note_worker_pids
        if [[ -z "$failed_at" ]] && grep -q "exit with exception" "$LOG_DIR/launcher.log" 2>/dev/null; then
            failed_at=$SECONDS
        fi
        if [[ -n "$failed_at" ]] && (( SECONDS - failed_at >= 5 )); then
            kill -TERM $(job_pids | grep -vx "$msrun_pid") 2>/dev/null
        fi
        if job_is_hung; then hung=1; stop_job; break; fi
    done
    wait "$msrun_pid"; local rc=$?
    (( hung )) && rc=124
    finish_job "$rc"
}

run_ranktable() {
    [[ -n "$RANK_TABLE" ]] || die "--startup ranktable needs --rank-table FILE"
    [[ -f "$RANK_TABLE" ]] || die "rank table '$RANK_TABLE' not found"
    RANK_TABLE="$(cd "$(dirname "$RANK_TABLE")" && pwd)/$(basename "$RANK_TABLE")"
    local local_args=(local "$RANK_TABLE")   # this server's cards; --workers, if given, must be the table's total
    [[ -n "$WORKERS_ARG" ]] && local_args+=(--workers "$WORKERS_ARG")
    [[ -n "$SERVER_ID" ]] && local_args+=(--server-id "$SERVER_ID")
    local ranks
    ranks="$("$PYTHON" -m helpers.rank_table "${local_args[@]}")" || exit 2   # it printed every problem
    if [[ "$DEVICE" != Ascend && $DRY_RUN -eq 0 ]]; then
        die "rank-table startup needs Ascend cards and HCCL; on $DEVICE use --startup msrun (or add --dry-run)"
    fi
    local rank device size
    while read -r rank device size; do
        local dir="$LOG_DIR/rank_$rank"
        local envs=(RANK_TABLE_FILE="$RANK_TABLE" RANK_ID="$rank" DEVICE_ID="$device" RANK_SIZE="$size")
        if [[ $DRY_RUN -eq 1 ]]; then
            echo "rank $rank: ${envs[*]} TUTORIAL_RUN_DIR=$LOG_DIR (cwd $dir) -> ${SCRIPT_CMD[*]} > $dir/worker_$rank.log"
            continue
        fi
        mkdir -p "$dir"
        start_rank "$rank" "$dir" "$dir/worker_$rank.log" env "${envs[@]}" "${DEATHSIG[@]}" "${SCRIPT_CMD[@]}"
    done <<< "$ranks"
    [[ $DRY_RUN -eq 1 ]] && { echo "# rank-table startup: $(wc -l <<< "$ranks") processes, logs in $LOG_DIR"; return 0; }
    WORKERS=${#RANK_PIDS[@]} LOCAL_WORKERS=${#RANK_PIDS[@]}
    echo "launch.sh: $WORKERS ranks on $DEVICE via rank table $RANK_TABLE, logs in $LOG_DIR"
    stop_on_signals
    local rc=0
    watch_ranks || rc=$?
    finish_job "$rc"
}

case "$STARTUP" in dynamic) run_dynamic ;; msrun) run_msrun ;; ranktable) run_ranktable ;; esac
exit $?
}
