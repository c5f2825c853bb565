import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
import software.amazon.dynamodb.services.local.shared.mapper.DynamoDbObjectMapper;
import sun.misc.Unsafe;

/**
 * DynamoDB Local listening on one address only. Its command line has no option for the address,
 * and its Jetty server listens on every interface, so anyone who can reach this machine could
 * read and write the store. This launcher builds the server from the same command line
 * (`ServerRunner.createServerFromCommandLineArgs`), sets the address on its Jetty connectors
 * before they open, and starts it. Started by lib/local/dynamodb-local.ts as a single-file
 * source program: `java -cp <jar and its libs> LoopbackDynamoDBLocal.java HOST <DynamoDB Local
 * options>`. It never configures DynamoDB Local's telemetry, so nothing is sent anywhere. It also
 * has DynamoDB Local parse each table's schema once (`SchemaCache`), and answers this machine's
 * own clients only (`LoopbackOnly`).
 */
public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LoopbackDynamoDBLocal HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    watchParent();
    SchemaCache.install();
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

  /**
   * DynamoDB Local keeps each table's schema as JSON beside its items and parses it again on every
   * read and write of an item (its SQLite layer's `getTableSchemaInfo2`, and the stream checks of
   * each write): on a store the tests keep busy that parse was a third of the JVM's CPU. This mapper
   * parses each distinct schema once and hands every caller a deep copy of it, so nothing a caller
   * does to its copy (UpdateTable, UpdateTimeToLive change theirs before writing it back) reaches
   * another table or a later read. It is keyed by the stored bytes, so a changed schema is parsed
   * anew. Anything it cannot copy field by field is parsed as before; a DynamoDB Local whose
   * internals moved starts without it, saying so.
   */
  static final class SchemaCache extends DynamoDbObjectMapper {
    private static final String[] HOLDERS = {
      "software.amazon.dynamodb.services.local.shared.access.sqlite.SQLiteDBAccessJob",
      "software.amazon.dynamodb.services.local.shared.access.sqlite.SQLiteDBAccess",
    };
    private static final String SCHEMA_CLASS =
        "software.amazon.dynamodb.services.local.shared.access.sqlite.TableSchemaInfo";
    private static final String OWN_PACKAGE = "software.amazon.dynamodb.services.local.";
    /** The SDK's model classes (AttributeDefinition, GlobalSecondaryIndexDescription, …) are immutable. */
    private static final String IMMUTABLE_PACKAGE = "software.amazon.awssdk.";
    private static final int LIMIT = 1024;

    private final Class<?> schemaClass;
    private final Unsafe unsafe;
    private final Map<Stored, Object> parsed = new ConcurrentHashMap<>();
    // a copy asks these of every object it meets: answered once a class
    private final ClassValue<Boolean> immutable = packageTest(IMMUTABLE_PACKAGE);
    private final ClassValue<Boolean> ownPackage = packageTest(OWN_PACKAGE);

    private static ClassValue<Boolean> packageTest(String prefix) {
      return new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
          return type.getName().startsWith(prefix);
        }
      };
    }

    private final ClassValue<Field[]> fields =
        new ClassValue<>() {
          @Override
          protected Field[] computeValue(Class<?> type) {
            List<Field> all = new ArrayList<>();
            for (Class<?> at = type; at != null && at != Object.class; at = at.getSuperclass()) {
              for (Field field : at.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())) continue;
                field.setAccessible(true);
                all.add(field);
              }
            }
            return all.toArray(new Field[0]);
          }
        };

    private SchemaCache(Class<?> schemaClass, Unsafe unsafe) {
      this.schemaClass = schemaClass;
      this.unsafe = unsafe;
    }

    static void install() {
      try {
        Field theUnsafe = Unsafe.class.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Unsafe unsafe = (Unsafe) theUnsafe.get(null);
        ClassLoader loader = LoopbackDynamoDBLocal.class.getClassLoader();
        SchemaCache cache = new SchemaCache(Class.forName(SCHEMA_CLASS, true, loader), unsafe);
        // every holder found before any is written: the cache is in place in both readers or neither
        List<Field> mappers = new ArrayList<>();
        for (String holder : HOLDERS) {
          Field mapper = Class.forName(holder, true, loader).getDeclaredField("MAPPER");
          if (!Modifier.isStatic(mapper.getModifiers()) || mapper.getType() != DynamoDbObjectMapper.class) {
            throw new IllegalStateException(holder + ".MAPPER is not a static DynamoDbObjectMapper");
          }
          mappers.add(mapper);
        }
        // static final: only Unsafe writes it, before the server has read it once
        for (Field mapper : mappers) {
          unsafe.putObject(unsafe.staticFieldBase(mapper), unsafe.staticFieldOffset(mapper), cache);
        }
        System.out.println("LoopbackDynamoDBLocal: table schemas parsed once");
      } catch (Throwable reason) {
        System.err.println("LoopbackDynamoDBLocal: table schemas parsed on every read (" + reason + ")");
      }
    }

    @Override
    public <T> T readValue(byte[] src, Class<T> type) throws java.io.IOException {
      if (type != schemaClass) return super.readValue(src, type);
      Stored key = new Stored(src);
      Object pristine = parsed.get(key);
      if (pristine != null) return type.cast(copy(pristine));
      pristine = super.readValue(src, type);
      Object handedOut;
      try {
        handedOut = copy(pristine);
      } catch (UncopyableException uncopyable) {
        return type.cast(pristine);
      }
      if (parsed.size() >= LIMIT) parsed.clear();
      parsed.put(new Stored(src.clone()), pristine);
      return type.cast(handedOut);
    }

    /** A schema's stored bytes, compared whole: a hash alone could hand one table another's schema. */
    private static final class Stored {
      private final byte[] bytes;
      private final int hash;

      Stored(byte[] bytes) {
        this.bytes = bytes;
        // a few hundred of its bytes, spread over it: the whole of a schema is compared in equals
        int hash = bytes.length;
        int step = Math.max(1, bytes.length / 256);
        for (int at = 0; at < bytes.length; at += step) hash = 31 * hash + bytes[at];
        this.hash = hash;
      }

      @Override
      public int hashCode() {
        return hash;
      }

      @Override
      public boolean equals(Object other) {
        return other instanceof Stored stored && hash == stored.hash && Arrays.equals(bytes, stored.bytes);
      }
    }

    private static final class UncopyableException extends RuntimeException {
      UncopyableException(Class<?> type) {
        super(type.getName(), null, false, false);
      }
    }

    private Object copy(Object value) {
      if (value == null
          || value instanceof String
          || value instanceof Number
          || value instanceof Boolean
          || value instanceof Character
          || value instanceof Enum<?>) {
        return value;
      }
      Class<?> type = value.getClass();
      if (immutable.get(type)) return value;
      if (value instanceof List<?> list) {
        List<Object> copied = new ArrayList<>(list.size());
        for (Object element : list) copied.add(copy(element));
        return copied;
      }
      if (value instanceof Set<?> set) {
        Set<Object> copied = new LinkedHashSet<>();
        for (Object element : set) copied.add(copy(element));
        return copied;
      }
      if (value instanceof Map<?, ?> map) {
        Map<Object, Object> copied = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : map.entrySet()) copied.put(copy(entry.getKey()), copy(entry.getValue()));
        return copied;
      }
      if (value instanceof Collection<?> || !ownPackage.get(type) || type.isArray()) {
        throw new UncopyableException(type);
      }
      try {
        Object copied = unsafe.allocateInstance(type);
        for (Field field : fields.get(type)) field.set(copied, copy(field.get(value)));
        return copied;
      } catch (ReflectiveOperationException | RuntimeException failure) {
        if (failure instanceof UncopyableException uncopyable) throw uncopyable;
        throw new UncopyableException(type);
      }
    }
  }
}
