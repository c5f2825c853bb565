import net from 'node:net';

/**
 * Unit tests never touch the network: any attempt to open a TCP connection fails the test
 * that made it, so a unit test that quietly needs an emulator cannot pass by accident.
 */
const refuse = () => {
  throw new Error('unit tests must not open network connections; move this test to test/integration');
};
net.Socket.prototype.connect = refuse as never;
net.connect = refuse as never;
net.createConnection = refuse as never;
