// SPDX-License-Identifier: GPL-2.0-only
//
// Scripted MySQL/MariaDB client on MariaDB Connector/J (Debian's
// libmariadb-java) for the privileged tests: a JVM whose TLS is the JDK's
// own, in Java. Same line protocol as mt_client.c and go_client:
//
//   connect                      ok | error <code> <message>
//   query <sql>                  ok <result_sets> <rows>  (all results read)
//   bigquery <n>                 query "select length('xxx...')" with n x's
//   parallel <conns> <queries>   ok <rows>  (<conns> threads, each on its own
//                                connection, runs "select <c>, <q>" for q in
//                                1..<queries>, then closes it)
//   ping                         ok  (Connection.isValid: COM_PING)
//   quit                         ok  (Connection.close: COM_QUIT, socket closed)
//   exit / EOF                   exit 0 without an answer
//
// Options: --user U --password P, then --socket PATH (Connector/J's
// localSocket, through JNA) or --host H --port P; --ssl (TLS, the server's
// certificate not verified); --multi (several statements per query).
// Statements go out as COM_QUERY (java.sql.Statement, the text protocol).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

public final class MtJavaClient {
    private static String socket = "", host = "", user = "", password = "";
    private static int port = 0;
    private static boolean ssl = false, multi = false;
    private static Connection conn;

    private static String oneLine(String s) {
        return s == null ? "" : String.join(" ", s.trim().split("\\s+"));
    }

    private static Connection open() throws SQLException {
        StringBuilder url = new StringBuilder("jdbc:mariadb://");
        if (!socket.isEmpty()) {
            url.append("localhost/?localSocket=").append(socket);
        } else {
            url.append(host).append(':').append(port).append("/?");
        }
        url.append("&user=").append(user).append("&password=").append(password);
        if (ssl) {
            url.append("&useSsl=true&trustServerCertificate=true");
        }
        if (multi) {
            url.append("&allowMultiQueries=true");
        }
        return DriverManager.getConnection(url.toString());
    }

    private static String query(Connection c, String sql) throws SQLException {
        int sets = 0;
        int rows = 0;
        try (Statement st = c.createStatement()) {
            boolean isResult = st.execute(sql);
            while (true) {
                if (isResult) {
                    sets++;
                    try (ResultSet rs = st.getResultSet()) {
                        while (rs.next()) {
                            rows++;
                        }
                    }
                } else if (st.getUpdateCount() == -1) {
                    break;
                }
                isResult = st.getMoreResults();
            }
        }
        return "ok " + sets + " " + rows;
    }

    private static String parallel(String arg) throws Exception {
        String[] f = arg.trim().split("\\s+");
        int conns = Integer.parseInt(f[0]);
        int queries = Integer.parseInt(f[1]);
        AtomicInteger rows = new AtomicInteger();
        AtomicReference<Exception> first = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int c = 1; c <= conns; c++) {
            final int cc = c;
            Thread t = new Thread(() -> {
                try (Connection own = open(); Statement st = own.createStatement()) {
                    for (int q = 1; q <= queries; q++) {
                        try (ResultSet rs = st.executeQuery("select " + cc + ", " + q)) {
                            if (!rs.next() || rs.getInt(1) != cc || rs.getInt(2) != q) {
                                throw new SQLException("select " + cc + ", " + q + ": wrong answer");
                            }
                            rows.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    first.compareAndSet(null, e);
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (first.get() != null) {
            throw first.get();
        }
        return "ok " + rows.get();
    }

    private static String handle(String line) {
        int sp = line.indexOf(' ');
        String name = sp < 0 ? line : line.substring(0, sp);
        String arg = sp < 0 ? "" : line.substring(sp + 1);
        try {
            switch (name) {
                case "connect":
                    if (conn != null) {
                        return "error 0 already connected";
                    }
                    conn = open();
                    return "ok";
                case "query":
                    return conn == null ? "error 0 not connected" : query(conn, arg);
                case "bigquery":
                    return conn == null ? "error 0 not connected"
                                        : query(conn, "select length('"
                                                          + "x".repeat(Integer.parseInt(arg)) + "')");
                case "parallel":
                    return parallel(arg);
                case "ping":
                    if (conn == null) {
                        return "error 0 not connected";
                    }
                    return conn.isValid(0) ? "ok" : "error 0 ping failed";
                case "quit":
                    if (conn == null) {
                        return "error 0 not connected";
                    }
                    conn.close();
                    conn = null;
                    return "ok";
                case "initdb": case "stats": case "change_user": case "prepare": case "execute":
                case "close_stmt":
                    return "unsupported";
                default:
                    return "error 0 unknown command";
            }
        } catch (SQLException e) {
            String msg = e.getMessage();
            // Connector/J prefixes the server's message with "(conn=<id>) ".
            if (msg != null && msg.startsWith("(conn=") && msg.indexOf(") ") > 0) {
                msg = msg.substring(msg.indexOf(") ") + 2);
            }
            return "error " + e.getErrorCode() + " " + oneLine(msg);
        } catch (Exception e) {
            return "error 0 " + oneLine(e.toString());
        }
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--socket": socket = args[++i]; break;
                case "--host": host = args[++i]; break;
                case "--port": port = Integer.parseInt(args[++i]); break;
                case "--user": user = args[++i]; break;
                case "--password": password = args[++i]; break;
                case "--ssl": ssl = true; break;
                case "--multi": multi = true; break;
                default:
                    System.err.println("MtJavaClient: unknown option " + args[i]);
                    System.exit(2);
            }
        }
        if (user.isEmpty() || (socket.isEmpty() && (host.isEmpty() || port == 0))) {
            System.err.println("MtJavaClient: give --user and --socket PATH or --host H --port P");
            System.exit(2);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            line = line.replaceAll("\r$", "");
            if (line.equals("exit")) {
                break;
            }
            out.println(handle(line));
        }
        System.exit(0);
    }
}
