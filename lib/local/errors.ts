/** Errors of the local runtime: each says in one line what the person running it should do. */
export class LocalRuntimeError extends Error {
  override name = 'LocalRuntimeError';
}

export class JavaMissingError extends LocalRuntimeError {
  override name = 'JavaMissingError';
  constructor(detail: string) {
    super(
      `DynamoDB Local needs a Java 17 or newer JDK, whose compiler starts it on loopback only (${detail}): install one (apt-get install openjdk-17-jdk-headless) or set AWS_ENDPOINT_URL_DYNAMODB to a running DynamoDB endpoint`,
    );
  }
}

export class PortInUseError extends LocalRuntimeError {
  override name = 'PortInUseError';
  constructor(port: number, variable: string) {
    super(`port ${port} is already in use: stop what holds it, or choose another port with ${variable}`);
  }
}

export class EmulatorStartError extends LocalRuntimeError {
  override name = 'EmulatorStartError';
}
