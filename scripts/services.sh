# Sourced by scripts/test.sh: start what the tests need and export where it is.
#   COTK_REPRO_TEST_PG_URL      a PostgreSQL database on a free loopback port (SQLAlchemy URL)
#   COTK_REPRO_TEST_BASE_IMAGE  a Docker base image (bookworm + python3) built offline; beside it, when root and
#                               debootstrap are there, cotk-repro-base:trixie (Python 3.13, scripts/base-image.sh)
#   COTK_REPRO_TEST_DOCKER_SKIP why there is no base image (when there is none): the Docker tests' skip reason
# A service that cannot start is reported; the tests that need it skip with that reason.

_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# -- Docker --------------------------------------------------------------------
if command -v dockerd >/dev/null 2>&1 && ! docker info >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "starting dockerd"
  (dockerd >/tmp/cotk-repro-dockerd.log 2>&1 &)
  for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
if docker info >/dev/null 2>&1; then
  if bash scripts/base-image.sh bookworm; then
    export COTK_REPRO_TEST_BASE_IMAGE=cotk-repro-base:bookworm
  else
    export COTK_REPRO_TEST_DOCKER_SKIP="scripts/base-image.sh could not build the Docker base image"
    echo "WARNING: $COTK_REPRO_TEST_DOCKER_SKIP; Docker tests will skip" >&2
  fi
  # Python 3.13 (a record of 3.13 reproduces there, and the demo under 3.13): debootstrap needs root; cached
  if docker image inspect cotk-repro-base:trixie >/dev/null 2>&1 \
     || { [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null 2>&1; }; then
    _cotk_t0=$SECONDS
    bash scripts/base-image.sh trixie \
      && echo "cotk-repro-base:trixie ready in $((SECONDS - _cotk_t0)) s" \
      || echo "WARNING: scripts/base-image.sh could not build cotk-repro-base:trixie; its tests will skip" >&2
  fi
elif [ "$(id -u)" != 0 ] && { command -v dockerd >/dev/null 2>&1 || [ -S /var/run/docker.sock ]; }; then
  export COTK_REPRO_TEST_DOCKER_SKIP="the Docker engine is not reachable as user $(id -un): starting dockerd or using its socket needs root or the docker group"
  echo "WARNING: $COTK_REPRO_TEST_DOCKER_SKIP; Docker tests will skip" >&2
else
  export COTK_REPRO_TEST_DOCKER_SKIP="no Docker engine is installed or running (as root, scripts/setup.sh installs docker.io)"
  echo "WARNING: $COTK_REPRO_TEST_DOCKER_SKIP; Docker tests will skip" >&2
fi

# -- PostgreSQL ----------------------------------------------------------------
if [ -z "${COTK_REPRO_TEST_PG_URL:-}" ]; then
  INITDB=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$INITDB" ]; then
    PGBIN=$(dirname "$INITDB")
    PGPORT=$(_free_port)
    PGDIR=$(mktemp -d /tmp/cotk-repro-pg.XXXXXX)
    RUNAS=()
    if [ "$(id -u)" = 0 ]; then chown postgres "$PGDIR"; RUNAS=(runuser -u postgres --); fi
    if "${RUNAS[@]}" "$PGBIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust >"$PGDIR/initdb.log" 2>&1 \
       && "${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
            -o "-p $PGPORT -k $PGDIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null \
       && "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "CREATE DATABASE cotk_test" >/dev/null; then
      export COTK_REPRO_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$PGPORT/cotk_test"
      export COTK_REPRO_TEST_PG_ADMIN_URL="postgresql+psycopg://postgres@127.0.0.1:$PGPORT/postgres"
      _COTK_PG_STOP=("${RUNAS[@]}" "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast stop)
      trap '"${_COTK_PG_STOP[@]}" >/dev/null 2>&1 || true; rm -rf "$PGDIR"' EXIT
      echo "PostgreSQL on 127.0.0.1:$PGPORT"
    else
      echo "WARNING: PostgreSQL did not start (see $PGDIR); PostgreSQL tests will skip" >&2
    fi
  else
    echo "WARNING: PostgreSQL is not installed; PostgreSQL tests will skip" >&2
  fi
fi
