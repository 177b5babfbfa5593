// SPDX-License-Identifier: GPL-2.0-only
//
// Scripted MySQL/MariaDB client on the npm "mysql2" package (callback API,
// one connection, no pool) for the privileged tests.
//
// The test starts this under a gate, attaches the tracer, then sends one
// command per line on stdin and waits for the one-line answer on stdout
// before sending the next, so every trace is deterministic. Same protocol as
// mt_client.c (libmariadb) and pymysql_client.py:
//
//   connect                      ok | error <code> <message>
//   query <sql>                  ok <result_sets> <rows>  (all results read)
//   bigquery <n>                 query "select length('xxx...')" with n x's
//   ping                         ok            (COM_PING)
//   initdb <db>                  unsupported   (mysql2 has no COM_INIT_DB)
//   stats                        unsupported   (mysql2 has no COM_STATISTICS)
//   change_user <user> <pw>      ok            (COM_CHANGE_USER)
//   prepare <sql>                ok            (COM_STMT_PREPARE)
//   execute [<int> ...]          ok <rows>     (COM_STMT_EXECUTE, INT params)
//   close_stmt                   ok            (COM_STMT_CLOSE)
//   quit                         ok            (COM_QUIT, socket closed)
//   exit / EOF                   exit 0 without an answer
//
// Any failure answers "error <code or 0> <message>". Nothing but answers is
// ever written to stdout; diagnostics go to stderr.
//
// mysql2 sends no statement of its own on connect. Two library behaviours
// worth knowing when reading a trace:
//  - a second "prepare" while a statement is open closes the old one first
//    (COM_STMT_CLOSE, then COM_STMT_PREPARE);
//  - COM_CHANGE_USER makes mysql2 drop its statement cache, which sends
//    COM_STMT_CLOSE for a statement still open right after the change; the
//    driver then forgets that statement (close_stmt answers an error).
// An empty password given to change_user makes mysql2 reuse the password of
// the connection.

'use strict';

const fs = require('fs');
const path = require('path');

let mysql;
try {
  mysql = require('mysql2');
} catch (err) {
  process.stderr.write(
    `mysql2_client: cannot load mysql2 (${err.message}); run ` +
      `scripts/install-node-deps.sh (looked from ${path.resolve(__dirname)})\n`
  );
  process.exit(2);
}

// libmariadb's client error numbers, so failures outside the server read
// the same in every driver.
const CR_CONNECTION_ERROR = 2002; // unix socket
const CR_CONN_HOST_ERROR = 2003; // TCP
const CR_SERVER_LOST = 2013;
const CR_SSL_CONNECTION_ERROR = 2026;

const USAGE =
  'usage: mysql2_client.js (--socket PATH | --host H --port P) --user U ' +
  '[--password P] [--database D] [--compress] [--ssl] [--local-infile] [--multi]';

function usage(message) {
  process.stderr.write(`mysql2_client: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    socket: null,
    host: null,
    port: null,
    user: null,
    password: '',
    database: null,
    compress: false,
    ssl: false,
    localInfile: false,
    multi: false,
  };
  const withValue = {
    '--socket': 'socket',
    '--host': 'host',
    '--port': 'port',
    '--user': 'user',
    '--password': 'password',
    '--database': 'database',
  };
  const flags = {
    '--compress': 'compress',
    '--ssl': 'ssl',
    '--local-infile': 'localInfile',
    '--multi': 'multi',
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === '-h' || arg === '--help') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (Object.hasOwn(withValue, arg)) {
      if (value === undefined) {
        if (i + 1 >= argv.length) {
          usage(`${arg} needs a value`);
        }
        value = argv[++i];
      }
      opts[withValue[arg]] = value;
    } else if (Object.hasOwn(flags, arg) && value === undefined) {
      opts[flags[arg]] = true;
    } else {
      usage(`unknown argument ${argv[i]}`);
    }
  }
  if (opts.user === null) {
    usage('--user is required');
  }
  if (opts.port !== null) {
    if (!/^\d+$/.test(opts.port) || +opts.port < 1 || +opts.port > 65535) {
      usage(`bad --port ${opts.port}`);
    }
    opts.port = +opts.port;
  }
  if (!opts.socket && !(opts.host && opts.port)) {
    usage('give --socket PATH or --host H --port P');
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

function oneLine(text) {
  return String(text).split(/\s+/).filter(Boolean).join(' ');
}

function isServerError(err) {
  return Boolean(
    err &&
      Number.isInteger(err.errno) &&
      err.errno > 0 &&
      (err.sqlState !== undefined || err.sqlMessage !== undefined)
  );
}

function errorLine(err) {
  let code = 0;
  if (isServerError(err)) {
    code = err.errno; // a server error
  } else if (err && typeof err.code === 'string') {
    if (err.code.startsWith('HANDSHAKE_') && /SSL/.test(err.code)) {
      code = CR_SSL_CONNECTION_ERROR;
    } else if (err.syscall === 'connect') {
      code = opts.socket ? CR_CONNECTION_ERROR : CR_CONN_HOST_ERROR;
    } else if (
      err.code === 'PROTOCOL_CONNECTION_LOST' ||
      err.code === 'ECONNRESET' ||
      err.code === 'EPIPE'
    ) {
      code = CR_SERVER_LOST;
    }
  }
  let message = err && err.message ? err.message : String(err);
  message = oneLine(message) || 'unknown error';
  return `error ${code} ${message}`;
}

function answer(line) {
  // Synchronous for pipes and files on Linux: the line is out before the
  // next command is read.
  process.stdout.write(`${line}\n`);
}

process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') {
    process.exit(0);
  }
  process.stderr.write(`mysql2_client: stdout: ${err.message}\n`);
  process.exit(1);
});

// ---------------------------------------------------------------------------
// Connection state

let conn = null; // the mysql2 Connection while connected
let stmt = null; // the open server-side prepared statement, if any
let failCurrent = null; // rejects the command in progress (see below)
let lostError = null; // why the connection went away, told once

function needConn() {
  if (conn === null) {
    const err = lostError || new Error('not connected');
    lostError = null;
    throw err;
  }
  return conn;
}

// Resolves once everything written to the server socket has left the
// process, so an answer never overtakes the packets it stands for.
function flushed(c) {
  return new Promise((resolve) => {
    const stream = c.stream;
    if (!stream || stream.destroyed || stream.writableLength === 0) {
      setImmediate(resolve);
      return;
    }
    const done = () => {
      stream.removeListener('drain', done);
      stream.removeListener('close', done);
      setImmediate(resolve);
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
}

function forget(c) {
  if (conn === c) {
    conn = null;
    stmt = null;
  }
}

// Runs a mysql2 command that reports on a callback and may produce result
// sets: returns [result_sets, rows]. mysql2 emits "fields" once per result
// (undefined for a result without columns, i.e. an OK packet), and hands the
// callback one entry per result when there are several.
function withResults(start) {
  return new Promise((resolve, reject) => {
    const kinds = [];
    const cmd = start((err, results) => {
      if (err) {
        reject(err);
        return;
      }
      let sets = 0;
      let rows = 0;
      if (kinds.length <= 1) {
        if (kinds[0]) {
          sets = 1;
          rows = results.length;
        }
      } else {
        kinds.forEach((isSet, i) => {
          if (isSet) {
            sets += 1;
            rows += results[i].length;
          }
        });
      }
      resolve([sets, rows]);
    });
    if (cmd && typeof cmd.on === 'function') {
      cmd.on('fields', (fields) => kinds.push(fields !== undefined));
    }
  });
}

// ---------------------------------------------------------------------------
// Commands

async function cmdConnect() {
  if (conn !== null) {
    throw new Error('already connected');
  }
  lostError = null;
  const config = {
    user: opts.user,
    password: opts.password,
    database: opts.database || undefined,
    compress: opts.compress,
    multipleStatements: opts.multi,
    // Send the SQL verbatim: no placeholder formatting.
    queryFormat: (sql) => sql,
    // mysql2 always offers CLIENT_LOCAL_FILES; take it away unless asked.
    flags: opts.localInfile ? [] : ['-LOCAL_FILES'],
  };
  if (opts.localInfile) {
    config.infileStreamFactory = (file) => fs.createReadStream(file);
  }
  if (opts.socket) {
    config.socketPath = opts.socket;
  } else {
    config.host = opts.host;
    config.port = opts.port;
  }
  if (opts.ssl) {
    // TLS is required; the certificate is not verified.
    config.ssl = { rejectUnauthorized: false };
  }
  const c = mysql.createConnection(config);
  // Keep errors that come outside any command (the server going away) from
  // crashing the process; the connection is dead after them.
  c.on('error', (err) => {
    process.stderr.write(`mysql2_client: connection error: ${err.message}\n`);
    if (conn === c && err.fatal !== false) {
      forget(c);
      // Told to the next command, unless the one in progress gets it.
      lostError = failCurrent ? null : err;
    }
    if (failCurrent) {
      failCurrent(err);
    }
  });
  await new Promise((resolve, reject) => {
    c.connect((err) => (err ? reject(err) : resolve()));
  });
  conn = c;
  return 'ok';
}

async function cmdQuery(sql) {
  const c = needConn();
  const [sets, rows] = await withResults((cb) => c.query(sql, cb));
  return `ok ${sets} ${rows}`;
}

async function cmdBigquery(arg) {
  if (!/^\d+$/.test(arg)) {
    throw new Error(`bigquery: not a count: ${arg}`);
  }
  return cmdQuery(`select length('${'x'.repeat(Number(arg))}')`);
}

async function cmdPing() {
  const c = needConn();
  await new Promise((resolve, reject) => {
    c.ping((err) => (err ? reject(err) : resolve()));
  });
  return 'ok';
}

// mysql2 keeps prepared statements in a cache keyed by their SQL and closes
// a statement whenever it leaves that cache (unprepare(), which then closes
// it a second time, the cache being cleared by changeUser(), eviction). Make
// close() send COM_STMT_CLOSE once only, whoever calls it.
function closeOnce(s) {
  const close = s.close.bind(s);
  let closed = false;
  s.close = () => {
    if (!closed) {
      closed = true;
      close();
    }
  };
  return s;
}

function closeStatement(c, s) {
  // unprepare() also drops the cache entry, so that a later prepare of the
  // same SQL goes to the server again; close() covers a statement no longer
  // in the cache.
  c.unprepare(s.query);
  s.close();
}

async function cmdChangeUser(arg) {
  const c = needConn();
  const m = /^(\S+)(?: (.*))?$/.exec(arg);
  if (!m) {
    throw new Error('usage: change_user <user> <password>');
  }
  const user = m[1];
  const password = m[2] === undefined ? '' : m[2];
  try {
    await new Promise((resolve, reject) => {
      c.changeUser({ user, password }, (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    // mysql2 has dropped (and closed) its statements either way.
    if (conn === c) {
      stmt = null;
    }
    await flushed(c);
  }
  return 'ok';
}

async function cmdPrepare(sql) {
  const c = needConn();
  if (stmt !== null) {
    const old = stmt;
    stmt = null;
    closeStatement(c, old);
  }
  stmt = await new Promise((resolve, reject) => {
    c.prepare(sql, (err, s) => (err ? reject(err) : resolve(closeOnce(s))));
  });
  return 'ok';
}

async function cmdExecute(arg) {
  const c = needConn();
  const words = arg.split(/\s+/).filter(Boolean);
  const params = words.map((w) => {
    if (!/^[+-]?\d+$/.test(w)) {
      throw new Error(`execute: not an integer: ${w}`);
    }
    // Sent as MYSQL_TYPE_LONG like mt_client.c, not as mysql2's default
    // DOUBLE for numbers (out of the 32-bit range is an error).
    return mysql.TypedParameter.LONG(BigInt(w));
  });
  if (stmt === null) {
    throw new Error('no prepared statement');
  }
  const s = stmt;
  const [, rows] = await withResults((cb) => s.execute(params, cb));
  return `ok ${rows}`;
}

async function cmdCloseStmt() {
  const c = needConn();
  if (stmt === null) {
    throw new Error('no prepared statement');
  }
  const s = stmt;
  stmt = null;
  closeStatement(c, s); // COM_STMT_CLOSE has no reply
  await flushed(c);
  return 'ok';
}

async function cmdQuit() {
  const c = needConn();
  forget(c);
  const stream = c.stream;
  const closed = new Promise((resolve) => {
    if (!stream || stream.destroyed) {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      stream.destroy();
      resolve();
    }, 5000);
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  c.end(); // COM_QUIT
  c.close(); // then FIN once the packet is out
  await closed;
  return 'ok';
}

function unsupported() {
  return 'unsupported';
}

const COMMANDS = {
  connect: cmdConnect,
  query: cmdQuery,
  bigquery: cmdBigquery,
  ping: cmdPing,
  initdb: unsupported, // no COM_INIT_DB in mysql2's API
  stats: unsupported, // no COM_STATISTICS in mysql2's API
  change_user: cmdChangeUser,
  prepare: cmdPrepare,
  execute: cmdExecute,
  close_stmt: cmdCloseStmt,
  quit: cmdQuit,
};

async function handle(line) {
  const sp = line.indexOf(' ');
  const name = sp < 0 ? line : line.slice(0, sp);
  const arg = sp < 0 ? '' : line.slice(sp + 1);
  if (!Object.hasOwn(COMMANDS, name)) {
    return 'error 0 unknown command';
  }
  try {
    // A fatal connection error reported only on the connection (not to
    // the command's callback) still ends the command.
    const failed = new Promise((_, reject) => {
      failCurrent = reject;
    });
    return await Promise.race([COMMANDS[name](arg), failed]);
  } catch (err) {
    // mysql2 marks errors that end the connection as fatal (a failed
    // COM_CHANGE_USER is marked so too, but the server keeps the session).
    const sessionKept = name === 'change_user' && isServerError(err);
    if (conn !== null && err && err.fatal && !sessionKept) {
      forget(conn);
    }
    return errorLine(err);
  } finally {
    failCurrent = null;
  }
}

// Lines end at "\n" only (a "\r" before it is dropped); the last line may
// lack its "\n".
async function* lines(stream) {
  let buf = Buffer.alloc(0);
  for await (const chunk of stream) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    let nl;
    while ((nl = buf.indexOf(0x0a)) !== -1) {
      yield buf.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      buf = buf.subarray(nl + 1);
    }
  }
  if (buf.length) {
    yield buf.toString('utf8').replace(/\r$/, '');
  }
}

process.on('uncaughtException', (err) => {
  process.stderr.write(`mysql2_client: ${err && err.stack ? err.stack : err}\n`);
  if (failCurrent) {
    failCurrent(err);
  }
});

async function main() {
  for await (const line of lines(process.stdin)) {
    if (line === 'exit') {
      break;
    }
    answer(await handle(line));
  }
  // exit (or EOF): leave at once, without COM_QUIT, like the other drivers.
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`mysql2_client: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
