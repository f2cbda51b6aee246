/*
 * The anchor of `npm run bench -- kafka` (bench/kafka.ts): Kafka's own Java client producing the
 * pipeline's exact records and consuming the pipeline's topic, warm. Run in source-file mode on
 * the broker's jars (the release's own folder, e.g. 4.4.0), so there is nothing to build:
 *
 *   java -cp 'infra/kafka/dist/libs/<version>/*' bench/java/KafkaAnchor.java produce --bootstrap host:port
 *     --file records.bin --topic-prefix p. --transactional-id id [--prop key=value]...
 *     [--warmup 2] [--rounds 3] [--broker-pid n]
 *   java -cp ... bench/java/KafkaAnchor.java consume --bootstrap host:port --topic t --records n
 *     [--prop key=value]... [--warmup 2] [--rounds 3] [--broker-pid n]
 *
 * Every round runs in this one JVM (warm-up rounds first, so JIT and connections are warm) and
 * prints one JSON line on stdout: {"warmup":…,"records":…,"bytes":…,"seconds":…,"cpu":…,
 * "brokerCpu":…}, where cpu is this process's CPU seconds in the round and brokerCpu the broker
 * process's (from /proc, when --broker-pid is given). Only the kafka-clients API that is the same
 * in Kafka 3.9 and 4.x is used.
 *
 * produce: the file (written by bench/kafka-anchor.ts) holds the pipeline's transactions as it
 * committed them: int32 transaction count, then per transaction int32 record count and per record
 * a topic suffix (u16 length + UTF-8; the topic is --topic-prefix + suffix), key and value (int32
 * length, -1 for null, then the bytes), int32 header count and per header a name (u16 + UTF-8)
 * and a value (int32 length + bytes). A round sends every transaction in order, one at a time:
 * begin, send its records, commit.
 *
 * consume: a new consumer each round reads the topic from its beginning (every partition
 * assigned, no group) until --records records arrived, timed from its first poll to the last
 * record; keys, values and headers stay bytes, as ConsumerPerformance leaves them.
 */
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaAnchor {
  /** A consumer read that gets no record for this long has lost its records: fail, never hang. */
  private static final Duration STALLED = Duration.ofSeconds(60);

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || !(args[0].equals("produce") || args[0].equals("consume")))
      usage("the first argument must be produce or consume");
    Options options = Options.parse(args);
    if (args[0].equals("produce")) produce(options);
    else consume(options);
  }

  private static void usage(String message) {
    System.err.println("KafkaAnchor: " + message);
    System.exit(2);
  }

  /** --name value pairs; --prop may repeat (Kafka client properties, key=value). */
  private static final class Options {
    final Map<String, String> values = new HashMap<>();
    final Properties props = new Properties();

    static Options parse(String[] args) {
      Options options = new Options();
      for (int i = 1; i < args.length; i += 2) {
        if (!args[i].startsWith("--") || i + 1 >= args.length) usage("expected --name value at " + args[i]);
        String name = args[i].substring(2);
        String value = args[i + 1];
        if (name.equals("prop")) {
          int eq = value.indexOf('=');
          if (eq < 1) usage("--prop " + value + ": expected key=value");
          options.props.setProperty(value.substring(0, eq), value.substring(eq + 1));
        } else options.values.put(name, value);
      }
      return options;
    }

    String required(String name) {
      String value = values.get(name);
      if (value == null) usage("--" + name + " is required");
      return value;
    }

    int integer(String name, int fallback) {
      String value = values.get(name);
      try {
        return value == null ? fallback : Integer.parseInt(value);
      } catch (NumberFormatException e) {
        usage("--" + name + " " + value + ": expected an integer");
        return fallback;
      }
    }
  }

  /** CPU seconds of this process and, when --broker-pid is given, of the broker. */
  private static final class Meter {
    private final Path brokerStat;
    private final long started = System.nanoTime();
    private final double cpuAtStart = processCpu();
    private final double brokerAtStart;

    Meter(String brokerPid) {
      brokerStat = brokerPid == null ? null : Path.of("/proc", brokerPid, "stat");
      brokerAtStart = brokerCpu();
    }

    /** utime + stime (fields 14, 15 of /proc/<pid>/stat) in clock ticks of 1/100 s, as bench/kafka.ts reads them. */
    private double brokerCpu() {
      if (brokerStat == null) return Double.NaN;
      try {
        String stat = Files.readString(brokerStat);
        String[] fields = stat.substring(stat.lastIndexOf(") ") + 2).split(" ");
        return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;
      } catch (IOException | RuntimeException e) {
        return Double.NaN;
      }
    }

    private static double processCpu() {
      return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
              .getProcessCpuTime()
          / 1e9;
    }

    /** One JSON line for a round that ended at `endedNanos`. */
    String report(boolean warmup, long records, long bytes, long endedNanos) {
      double broker = brokerCpu() - brokerAtStart;
      return String.format(
          "{\"warmup\":%b,\"records\":%d,\"bytes\":%d,\"seconds\":%.6f,\"cpu\":%.3f,\"brokerCpu\":%s}",
          warmup,
          records,
          bytes,
          (endedNanos - started) / 1e9,
          processCpu() - cpuAtStart,
          Double.isNaN(broker) ? "null" : String.format("%.3f", broker));
    }
  }

  private static byte[] readBytes(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0) return null;
    byte[] bytes = new byte[length];
    in.readFully(bytes);
    return bytes;
  }

  private static String readText(DataInputStream in) throws IOException {
    byte[] bytes = new byte[in.readUnsignedShort()];
    in.readFully(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static List<List<ProducerRecord<byte[], byte[]>>> readTransactions(String file, String prefix)
      throws IOException {
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(file), 1 << 20))) {
      int count = in.readInt();
      List<List<ProducerRecord<byte[], byte[]>>> transactions = new ArrayList<>(count);
      for (int t = 0; t < count; t++) {
        int records = in.readInt();
        List<ProducerRecord<byte[], byte[]>> transaction = new ArrayList<>(records);
        for (int r = 0; r < records; r++) {
          String topic = prefix + readText(in);
          byte[] key = readBytes(in);
          byte[] value = readBytes(in);
          RecordHeaders headers = new RecordHeaders();
          for (int h = in.readInt(); h > 0; h--) headers.add(readText(in), readBytes(in));
          transaction.add(new ProducerRecord<>(topic, null, null, key, value, headers));
        }
        transactions.add(transaction);
      }
      return transactions;
    }
  }

  private static long recordBytes(byte[] key, byte[] value) {
    return (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
  }

  private static void produce(Options options) throws IOException {
    List<List<ProducerRecord<byte[], byte[]>>> transactions =
        readTransactions(options.required("file"), options.required("topic-prefix"));
    long records = 0;
    long bytes = 0;
    for (List<ProducerRecord<byte[], byte[]>> transaction : transactions)
      for (ProducerRecord<byte[], byte[]> record : transaction) {
        records++;
        bytes += recordBytes(record.key(), record.value());
      }
    Properties props = options.props;
    props.setProperty("bootstrap.servers", options.required("bootstrap"));
    props.setProperty("transactional.id", options.required("transactional-id"));
    int warmup = options.integer("warmup", 2);
    int rounds = options.integer("rounds", 3);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      for (int round = 0; round < warmup + rounds; round++) {
        Meter meter = new Meter(options.values.get("broker-pid"));
        for (List<ProducerRecord<byte[], byte[]>> transaction : transactions) {
          producer.beginTransaction();
          for (ProducerRecord<byte[], byte[]> record : transaction) producer.send(record);
          // Flushes the transaction's batches and throws if any of its sends failed.
          producer.commitTransaction();
        }
        System.out.println(meter.report(round < warmup, records, bytes, System.nanoTime()));
      }
    }
  }

  private static void consume(Options options) {
    String topic = options.required("topic");
    long expected = options.integer("records", -1);
    if (expected < 1) usage("--records must be at least 1");
    Properties props = options.props;
    props.setProperty("bootstrap.servers", options.required("bootstrap"));
    props.setProperty("enable.auto.commit", "false");
    int warmup = options.integer("warmup", 2);
    int rounds = options.integer("rounds", 3);
    for (int round = 0; round < warmup + rounds; round++) {
      // A consumer per round, as readTopic opens one per read: a reused one would first wait out
      // its last long poll (fetch.max.wait.ms) at the end of the topic before fetching again.
      try (KafkaConsumer<byte[], byte[]> consumer =
          new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo p : consumer.partitionsFor(topic)) partitions.add(new TopicPartition(topic, p.partition()));
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        // Connected and holding its partitions, where readTopic's clock starts too (joined).
        Meter meter = new Meter(options.values.get("broker-pid"));
        long count = 0;
        long bytes = 0;
        long last = System.nanoTime();
        while (count < expected) {
          ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(250));
          if (polled.isEmpty()) {
            if (System.nanoTime() - last > STALLED.toNanos())
              throw new IllegalStateException(
                  topic + ": " + count + " of " + expected + " records after " + STALLED.toSeconds() + " s without one");
            continue;
          }
          for (ConsumerRecord<byte[], byte[]> record : polled) {
            count++;
            bytes += recordBytes(record.key(), record.value());
          }
          last = System.nanoTime();
        }
        System.out.println(meter.report(round < warmup, count, bytes, last));
      }
    }
  }
}
