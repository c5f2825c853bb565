/** A broker and a group of three web nodes consuming it: the smallest mesh file with a relation and a group. */
export const brokerAndThreeWebs = `version: 1
nodes:
  broker-1:
    labels: {role: broker}
    modules:
      rabbit: {provides: amqp}
groups:
  web:
    nodes: web-[1-3]
    labels: {role: web}
    modules:
      nginx: {consumes: [broker-1/rabbit]}
`;
