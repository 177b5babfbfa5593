-- SPDX-License-Identifier: GPL-2.0-only
--
-- mysqltrace trace-file schema (WL#4878): ordinary tables with exactly the
-- columns (names, order, types) of MariaDB 10.11's
--   performance_schema.events_statements_current
--   performance_schema.events_stages_current
--   performance_schema.events_waits_current
-- so a trace taken with eBPF, without performance_schema, can be queried with
-- the same SQL as the real tables.
--
-- Differences from performance_schema: every column is nullable (a trace
-- file's start row has no TIMER_END yet, and a tracer may not know every
-- value), the tables use InnoDB and utf8mb4 (strings are cut to their column's
-- length, as performance_schema does), there are no keys, and each event
-- appears twice: a start row (END_EVENT_ID, TIMER_END and TIMER_WAIT NULL) and
-- an end row. Pick the end rows with `WHERE TIMER_END IS NOT NULL`.
--
-- Load a trace (a `mysqltrace server` trace directory holds one file per
-- thread, thread.<user@host>.<THREAD_ID>; merge puts them in time order):
--   mariadb -e 'CREATE DATABASE trace'
--   mariadb trace < /usr/local/share/mysqltrace/schema.sql   (as installed)
--   mysqltrace merge DIR/thread.* --output trace.sql
--   mariadb trace < trace.sql
-- Trace files use backslash escapes in strings (do not load them with sql_mode
-- NO_BACKSLASH_ESCAPES) and mark non-ASCII strings _utf8mb4, so any client
-- character set works.

CREATE TABLE IF NOT EXISTS `events_statements_current` (
  `THREAD_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `END_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_NAME` varchar(128) DEFAULT NULL,
  `SOURCE` varchar(64) DEFAULT NULL,
  `TIMER_START` bigint(20) unsigned DEFAULT NULL,
  `TIMER_END` bigint(20) unsigned DEFAULT NULL,
  `TIMER_WAIT` bigint(20) unsigned DEFAULT NULL,
  `LOCK_TIME` bigint(20) unsigned DEFAULT NULL,
  `SQL_TEXT` longtext DEFAULT NULL,
  `DIGEST` varchar(32) DEFAULT NULL,
  `DIGEST_TEXT` longtext DEFAULT NULL,
  `CURRENT_SCHEMA` varchar(64) DEFAULT NULL,
  `OBJECT_TYPE` varchar(64) DEFAULT NULL,
  `OBJECT_SCHEMA` varchar(64) DEFAULT NULL,
  `OBJECT_NAME` varchar(64) DEFAULT NULL,
  `OBJECT_INSTANCE_BEGIN` bigint(20) unsigned DEFAULT NULL,
  `MYSQL_ERRNO` int(11) DEFAULT NULL,
  `RETURNED_SQLSTATE` varchar(5) DEFAULT NULL,
  `MESSAGE_TEXT` varchar(128) DEFAULT NULL,
  `ERRORS` bigint(20) unsigned DEFAULT NULL,
  `WARNINGS` bigint(20) unsigned DEFAULT NULL,
  `ROWS_AFFECTED` bigint(20) unsigned DEFAULT NULL,
  `ROWS_SENT` bigint(20) unsigned DEFAULT NULL,
  `ROWS_EXAMINED` bigint(20) unsigned DEFAULT NULL,
  `CREATED_TMP_DISK_TABLES` bigint(20) unsigned DEFAULT NULL,
  `CREATED_TMP_TABLES` bigint(20) unsigned DEFAULT NULL,
  `SELECT_FULL_JOIN` bigint(20) unsigned DEFAULT NULL,
  `SELECT_FULL_RANGE_JOIN` bigint(20) unsigned DEFAULT NULL,
  `SELECT_RANGE` bigint(20) unsigned DEFAULT NULL,
  `SELECT_RANGE_CHECK` bigint(20) unsigned DEFAULT NULL,
  `SELECT_SCAN` bigint(20) unsigned DEFAULT NULL,
  `SORT_MERGE_PASSES` bigint(20) unsigned DEFAULT NULL,
  `SORT_RANGE` bigint(20) unsigned DEFAULT NULL,
  `SORT_ROWS` bigint(20) unsigned DEFAULT NULL,
  `SORT_SCAN` bigint(20) unsigned DEFAULT NULL,
  `NO_INDEX_USED` bigint(20) unsigned DEFAULT NULL,
  `NO_GOOD_INDEX_USED` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_TYPE` enum('TRANSACTION','STATEMENT','STAGE','WAIT') DEFAULT NULL,
  `NESTING_EVENT_LEVEL` int(11) DEFAULT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `events_stages_current` (
  `THREAD_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `END_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_NAME` varchar(128) DEFAULT NULL,
  `SOURCE` varchar(64) DEFAULT NULL,
  `TIMER_START` bigint(20) unsigned DEFAULT NULL,
  `TIMER_END` bigint(20) unsigned DEFAULT NULL,
  `TIMER_WAIT` bigint(20) unsigned DEFAULT NULL,
  `WORK_COMPLETED` bigint(20) unsigned DEFAULT NULL,
  `WORK_ESTIMATED` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_TYPE` enum('TRANSACTION','STATEMENT','STAGE','WAIT') DEFAULT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `events_waits_current` (
  `THREAD_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `END_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `EVENT_NAME` varchar(128) DEFAULT NULL,
  `SOURCE` varchar(64) DEFAULT NULL,
  `TIMER_START` bigint(20) unsigned DEFAULT NULL,
  `TIMER_END` bigint(20) unsigned DEFAULT NULL,
  `TIMER_WAIT` bigint(20) unsigned DEFAULT NULL,
  `SPINS` int(10) unsigned DEFAULT NULL,
  `OBJECT_SCHEMA` varchar(64) DEFAULT NULL,
  `OBJECT_NAME` varchar(512) DEFAULT NULL,
  `INDEX_NAME` varchar(64) DEFAULT NULL,
  `OBJECT_TYPE` varchar(64) DEFAULT NULL,
  `OBJECT_INSTANCE_BEGIN` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_ID` bigint(20) unsigned DEFAULT NULL,
  `NESTING_EVENT_TYPE` enum('TRANSACTION','STATEMENT','STAGE','WAIT') DEFAULT NULL,
  `OPERATION` varchar(32) DEFAULT NULL,
  `NUMBER_OF_BYTES` bigint(20) DEFAULT NULL,
  `FLAGS` int(10) unsigned DEFAULT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
