import java.lang.reflect.Field;
import java.util.Arrays;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local listening on one address only. Its command line has no option for the address,
 * and its Jetty server listens on every interface, so anyone who can reach this machine could
 * read and write the store. This launcher builds the server from the same command line
 * (`ServerRunner.createServerFromCommandLineArgs`), sets the address on its Jetty connectors
 * before they open, and starts it. Started by lib/runtime/dynamodb-local.ts as a single-file
 * source program: `java -cp <jar and its libs> LoopbackDynamoDBLocal.java HOST <DynamoDB Local
 * options>`. It never configures DynamoDB Local's telemetry, so nothing is sent anywhere.
 */
public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LoopbackDynamoDBLocal HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
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
    proxy.start();
  }
}
