import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.Set;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local listening on one address only. Its command line has no option for the address,
 * and its Jetty server listens on every interface, so anyone who can reach this machine could
 * read and write the store. This launcher builds the server from the same command line
 * (`ServerRunner.createServerFromCommandLineArgs`), takes its Jetty server (the private field
 * `server`: DynamoDBProxyServer has no getter), sets the address on its connectors before they
 * open, and starts it. It also answers this machine's own clients only (`LoopbackOnly`), and
 * stops when the process that started it is gone (`watchParent`). DynamoDB Local's own classes
 * run as released: nothing of theirs is replaced. It never configures DynamoDB Local's
 * telemetry, so nothing is sent anywhere. Started by lib/local/dynamodb-local.ts: `java -cp <its
 * class, the jar and its libs> LoopbackDynamoDBLocal HOST <DynamoDB Local options>`, compiled once
 * by lib/local/compiled-launcher.ts, or run as a single-file source program
 * (`LoopbackDynamoDBLocal.java`) where no `javac` is at hand.
 */
public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LoopbackDynamoDBLocal HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    watchParent();
    DynamoDBProxyServer proxy =
        ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server jetty = (Server) field.get(proxy);
    Connector[] connectors = jetty.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local has no connector to bind");
    for (Connector connector : connectors) {
      if (!(connector instanceof ServerConnector)) {
        throw new IllegalStateException("DynamoDB Local has a connector that cannot be bound: " + connector);
      }
      ((ServerConnector) connector).setHost(host);
    }
    jetty.setHandler(new LoopbackOnly(jetty.getHandler(), portOf(args)));
    proxy.start();
  }

  /**
   * A store never outlives the control plane that started it, however that one ends: its stdin
   * is a pipe from it (lib/local/dynamodb-local.ts), which the kernel closes when that process
   * is gone, `kill -9` included. A thread waits for the end of it and stops the JVM (halted if
   * stopping does not end it in 3 s); a second store on the same data folder is then never left
   * behind the first.
   */
  static void watchParent() {
    Thread watchdog =
        new Thread(
            () -> {
              try {
                while (System.in.read() != -1) {}
              } catch (java.io.IOException gone) {
                // the pipe broke: its writer is gone too
              }
              System.err.println("LoopbackDynamoDBLocal: the process that started it is gone; stopping");
              Thread halt =
                  new Thread(
                      () -> {
                        try {
                          Thread.sleep(3_000);
                        } catch (InterruptedException ignored) {
                          // halted now
                        }
                        Runtime.getRuntime().halt(1);
                      });
              halt.setDaemon(true);
              halt.start();
              System.exit(0);
            },
            "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  /** The `-port` DynamoDB Local is given (8000 unless told). */
  static int portOf(String[] args) {
    for (int i = 1; i + 1 < args.length; i++) if (args[i].equals("-port")) return Integer.parseInt(args[i + 1]);
    return 8000;
  }

  /**
   * The loopback guard of every server `npm start` runs (lib/clients/http/loopback-guard.ts): listening
   * on loopback keeps other machines out, not the pages a browser on this machine has open.
   * DynamoDB Local answers any origin's CORS preflight (its `-cors` default is `*`), so a page that
   * found its port could read and write the store, and one that rebinds its own name to
   * 127.0.0.1 could too. Its clients are the SDK's: the endpoint's own `Host`, no `Origin`, its own
   * media type, never a form. Anything else is refused before DynamoDB Local sees it.
   */
  static final class LoopbackOnly extends Handler.Wrapper {
    private static final Set<String> FORMS =
        Set.of("text/plain", "application/x-www-form-urlencoded", "multipart/form-data");
    private final Set<String> hosts;

    LoopbackOnly(Handler inner, int port) {
      super(inner);
      this.hosts = Set.of("127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
      HttpFields headers = request.getHeaders();
      String host = headers.get("Host");
      String type = headers.get("Content-Type");
      String media = type == null ? "" : type.split(";", 2)[0].trim().toLowerCase(java.util.Locale.ROOT);
      String refusal =
          host == null || !hosts.contains(host.trim().toLowerCase(java.util.Locale.ROOT))
              ? "this store answers only to loopback"
              : headers.get("Origin") != null
                  ? "this store answers no web page"
                  : FORMS.contains(media) ? "this store takes no form" : null;
      if (refusal == null) return super.handle(request, response, callback);
      Response.writeError(request, response, callback, refusal.endsWith("form") ? 415 : 403, refusal);
      return true;
    }
  }
}
